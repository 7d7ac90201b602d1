"""What the Usenet gateway keeps: list posts waiting for the news server
(:mod:`mtaplugin.news.queue`) and how far each list has gated its linked newsgroup
(:mod:`mtaplugin.frontends.news`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.model.base import Base, HandOffColumns, UTCDateTime


class NewsArticle(HandOffColumns, Base):
    """One article for the list's linked newsgroup, cleansed and ready to POST
    (:func:`mtaplugin.news.outgoing.article_for`).  Queued in the transaction that
    accepted (or released) the post; posted by the ``news-post`` job.  ``failed`` set:
    the server refused it for good (or it waited too long); kept with ``last_error``."""

    __tablename__ = "news_queue"
    __table_args__ = (Index("ix_news_queue_due", "failed", "next_attempt_at"),)

    newsgroup: Mapped[str] = mapped_column(String(255))
    article: Mapped[bytes] = mapped_column(LargeBinary)


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
