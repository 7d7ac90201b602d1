"""The bounces a list received (:mod:`mtaplugin.bounces`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.enums import BounceContext, BounceKind
from mtaplugin.model.base import Base, UTCDateTime, enum_with_default, utcnow


class BounceEvent(Base):
    __tablename__ = "bounce_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int | None] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), index=True, default=None
    )
    email: Mapped[str] = mapped_column(String(320), index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    message_id: Mapped[str] = mapped_column(String(998), default="")
    context: Mapped[BounceContext] = enum_with_default(BounceContext.normal)
    #: whether it raises the member's score (only ``hard`` does)
    kind: Mapped[BounceKind] = enum_with_default(BounceKind.hard)
    #: the RFC 3463 status code the DSN gave ("5.1.1"), "" when it gave none
    status: Mapped[str] = mapped_column(String(16), default="")
    #: the receiving server's words (Diagnostic-Code), for the owners and the member
    diagnostic: Mapped[str] = mapped_column(Text, default="")
    processed: Mapped[bool] = mapped_column(Boolean, default=False)
    #: the DSN as received (for bounces nobody recognised)
    raw: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
