"""What the Usenet gateway keeps: how far each list has gated its linked newsgroup
(:mod:`mtaplugin.news.incoming`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.model.base import Base, UTCDateTime


class NewsWatermark(Base):
    """The number of the last article of ``newsgroup`` that the list has gated (or
    skipped).  It moves forward with a compare-and-set ``UPDATE`` in the same transaction
    as the gated post's decision, so an article is gated once, whatever the restarts and
    however many mail hosts poll.  A watermark of another group than the list's
    ``linked_newsgroup`` counts for nothing: the list starts over on its new group."""

    __tablename__ = "news_watermarks"

    mailing_list_id: Mapped[int] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), primary_key=True
    )
    newsgroup: Mapped[str] = mapped_column(String(255))
    last_number: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
