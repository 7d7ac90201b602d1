"""The declarative base and the column helpers shared by every model module."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import (
    JSON,
    DateTime,
    Enum,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, MappedColumn, mapped_column

# Stable constraint names, so that Alembic migrations work the same on SQLite and PostgreSQL.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_uid() -> str:
    """A 32-hex identifier, as Mailman's REST 3.1 shows user_id and member_id."""
    return uuid.uuid4().hex


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both SQLite (which keeps none) and PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


def enum_column(enum_cls: type[StrEnum]) -> Enum:
    """Store an enum by name in a VARCHAR (no native PostgreSQL ENUM: migrations stay simple)."""
    return Enum(
        enum_cls,
        native_enum=False,
        create_constraint=False,
        length=32,
        values_callable=lambda cls: [m.value for m in cls],
    )


_E = TypeVar("_E", bound=StrEnum)


def enum_with_default(default: _E) -> MappedColumn[_E]:
    """A column of ``default``'s enum (:func:`enum_column`) that ``default`` fills."""
    return mapped_column(enum_column(type(default)), default=default)


JSONList = JSON


class PostColumns:
    """The columns of a post kept whole on a list (a held post, a post waiting for the
    digest): its list, Message-ID, sender, subject and bytes."""

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), index=True
    )
    message_id: Mapped[str] = mapped_column(String(998), default="")
    sender: Mapped[str] = mapped_column(String(320), default="")
    subject: Mapped[str] = mapped_column(Text, default="")
    raw: Mapped[bytes] = mapped_column(LargeBinary)


class HandOffColumns:
    """The columns of a row waiting for another server (a news article, a post for an
    external archiver): its list and where its retries stand
    (:mod:`mtaplugin.vocabulary.retry`); the table adds what it hands over."""

    # (sort_order: the list and the id first, then the table's own columns)
    id: Mapped[int] = mapped_column(primary_key=True, sort_order=-1)
    mailing_list_id: Mapped[int] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), index=True, sort_order=-1
    )
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    queued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    failed: Mapped[bool] = mapped_column(default=False)
    last_error: Mapped[str] = mapped_column(Text, default="")
