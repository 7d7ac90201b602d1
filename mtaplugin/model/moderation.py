"""What moderation keeps: bans, header matches, held posts, pending requests, the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.enums import Action, RequestType, TokenOwner
from mtaplugin.model.base import (
    Base,
    PostColumns,
    UTCDateTime,
    enum_column,
    enum_with_default,
    utcnow,
)


class Ban(Base):
    """A banned address: exact (lower case) or, when it starts with ``^``, a regex.

    ``mailing_list_id`` NULL means a global (site-wide) ban.
    """

    __tablename__ = "bans"
    __table_args__ = (
        UniqueConstraint("mailing_list_id", "email", name="uq_bans_list_email"),
        # One indexed query answers "is this exact address banned here or globally";
        # the (few) regex bans are fetched by is_regex.
        Index("ix_bans_email", "email"),
        Index("ix_bans_regex", "is_regex"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(320))
    is_regex: Mapped[bool] = mapped_column(Boolean, default=False)
    mailing_list_id: Mapped[int | None] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class HeaderMatch(Base):
    __tablename__ = "header_matches"
    __table_args__ = (
        UniqueConstraint("mailing_list_id", "position", name="uq_header_matches_position"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)
    header: Mapped[str] = mapped_column(String(255))
    pattern: Mapped[str] = mapped_column(Text)
    #: None = the site's default chain (hold)
    action: Mapped[Action | None] = mapped_column(enum_column(Action), default=None)
    tag: Mapped[str | None] = mapped_column(String(255), default=None)


class HeldMessage(PostColumns, Base):
    """A post held for moderation: committed to SQL before the MTA is told 250.  Its
    ``id`` is REST's request_id, never reused (AUTOINCREMENT on SQLite; a stale notice or
    browser tab must not act on another post)."""

    __tablename__ = "held_messages"
    __table_args__ = (
        # the held posts whose notices the worker has still to make (migration 0049)
        Index(
            "ix_held_messages_notices_due",
            "id",
            sqlite_where=text("notices_due"),
            postgresql_where=text("notices_due"),
        ),
        {"sqlite_autoincrement": True},
    )

    #: every reason a rule gave, as (rule, text) pairs
    reasons: Mapped[list[Any]] = mapped_column(JSON, default=list)
    #: envelope facts kept for the moderator and the release: mail_from, client, auth...
    envelope: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    hold_date: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: what backed the From: address when the post came in ("dkim:example.org", "sasl:ann",
    #: ...); empty: not authenticated, so nothing is mailed back to it
    sender_signals: Mapped[list[str]] = mapped_column(JSON, default=list)
    #: its notices (the moderators', the poster's) are still to be made: the decision
    #: stores the post so and the worker makes them after the answer
    #: (:mod:`mtaplugin.manage.hold_notices`)
    notices_due: Mapped[bool] = mapped_column(Boolean, server_default=false())


class PendingRequest(Base):
    """Anything waiting on a token: a (un)subscription, a held post's notice, a reset."""

    __tablename__ = "pending_requests"
    __table_args__ = (
        Index("ix_pending_requests_expires", "expires_at"),
        # ids never reused on SQLite, as held posts'
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    #: from ``secrets.token_urlsafe``; single use
    token: Mapped[str] = mapped_column(String(64), unique=True)
    request_type: Mapped[RequestType] = mapped_column(enum_column(RequestType))
    token_owner: Mapped[TokenOwner] = enum_with_default(TokenOwner.subscriber)
    mailing_list_id: Mapped[int | None] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), index=True, default=None
    )
    held_message_id: Mapped[int | None] = mapped_column(
        ForeignKey("held_messages.id", ondelete="CASCADE"), default=None
    )
    email: Mapped[str] = mapped_column(String(320), default="")
    display_name: Mapped[str] = mapped_column(String(255), default="")
    #: the workflow step this request waits in
    step: Mapped[str] = mapped_column(String(64), default="")
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class AuditEntry(Base):
    """Who did what to which list, and when (moderation and membership actions)."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(320))
    action: Mapped[str] = mapped_column(String(64))
    mailing_list_id: Mapped[int | None] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="SET NULL"), index=True, default=None
    )
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
