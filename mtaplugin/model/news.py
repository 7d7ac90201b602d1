"""The Usenet gateway's queue: list posts waiting for the news server."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.model.base import Base, UTCDateTime, utcnow


class NewsArticle(Base):
    """One article for the list's linked newsgroup, cleansed and ready to POST
    (:func:`mtaplugin.news.outgoing.article_for`).  Queued in the transaction that
    accepted (or released) the post; posted by the ``news-post`` job.  ``failed`` set:
    the server refused it for good (or it waited too long); kept with ``last_error``."""

    __tablename__ = "news_queue"
    __table_args__ = (Index("ix_news_queue_due", "failed", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), index=True
    )
    newsgroup: Mapped[str] = mapped_column(String(255))
    article: Mapped[bytes] = mapped_column(LargeBinary)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    queued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    failed: Mapped[bool] = mapped_column(default=False)
    last_error: Mapped[str] = mapped_column(Text, default="")
