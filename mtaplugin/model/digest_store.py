"""The posts waiting for a list's next digest, and the last digest owed to a member who
left (:mod:`mtaplugin.digests`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.enums import DeliveryMode
from mtaplugin.model.base import Base, PostColumns, UTCDateTime, enum_column, utcnow


class DigestEntry(PostColumns, Base):
    """A post waiting for the next digest of its list."""

    __tablename__ = "digest_queue"

    added_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class OneLastDigest(Base):
    """A member who left digest delivery while posts waited for the digest (Mailman's
    ``OneLastDigest``): the next digest of the list still goes to them, in the kind they
    had, since those posts reached them neither as regular copies nor yet as a digest."""

    __tablename__ = "one_last_digest"

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), index=True
    )
    email: Mapped[str] = mapped_column(String(320))
    delivery_mode: Mapped[DeliveryMode] = mapped_column(enum_column(DeliveryMode))
    added_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
