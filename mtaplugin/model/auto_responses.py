"""The automatic replies sent, for their caps (:mod:`mtaplugin.commands.replies`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.model.base import Base, UTCDateTime, utcnow


class AutoResponseRecord(Base):
    """One automatic reply sent, for the per-sender daily caps."""

    __tablename__ = "autoresponse_records"
    __table_args__ = (Index("ix_autoresponse_lookup", "email", "mailing_list_id", "sent_on"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(320))
    mailing_list_id: Mapped[int | None] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), default=None
    )
    response_type: Mapped[str] = mapped_column(String(32))
    sent_on: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
