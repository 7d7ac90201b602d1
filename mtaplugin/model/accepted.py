"""The journal of accepted posts (:mod:`mtaplugin.accepted`): each post a list accepted,
written in the transaction that accepted it (before the 250, or with the release of a
held post), and removed by the worker in the transaction that gives it to the archive,
the external archivers, the digest and the news gateway."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.model.base import Base, UTCDateTime, utcnow


class AcceptedPost(Base):
    """One accepted post waiting for the fan-out: the bytes the members' copy was made
    from, what the transforms need to make the archive copy again (its number, its
    topics), where it came from, and which of the stage's outlets want it.  ``failed``:
    the fan-out broke on this post (a bug; ``last_error`` says what); it is kept for the
    admin and no longer holds up the posts after it."""

    __tablename__ = "accepted_posts"

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), index=True
    )
    #: ``mta`` (SMTP, LMTP, the pipe, Exim), ``release`` (a held post), ``news`` (an
    #: article gated in from the list's newsgroup)
    origin: Mapped[str] = mapped_column(String(16))
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    post_number: Mapped[int] = mapped_column(Integer)
    topics: Mapped[list[str]] = mapped_column(JSON, default=list)
    #: the list keeps the post (its archive_policy, the post's X-No-Archive/Archive:)
    archive: Mapped[bool] = mapped_column(default=False)
    #: the digest members get it (they are some, and it was not urgent)
    digest: Mapped[bool] = mapped_column(default=False)
    #: the list gateways to a newsgroup and the post did not come from it
    news: Mapped[bool] = mapped_column(default=False)
    accepted_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    failed: Mapped[bool] = mapped_column(default=False)
    last_error: Mapped[str] = mapped_column(Text, default="")
