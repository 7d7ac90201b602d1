"""The outbox: copies waiting in SQL for the MTA's re-injection listener
(:mod:`mtaplugin.outbox`), and the posts content filtering kept from the members."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.enums import OutboxStatus
from mtaplugin.model.base import Base, UTCDateTime, enum_with_default, utcnow


class OutboxMessage(Base):
    """A message mtaplugin must submit to the MTA's re-injection listener.

    Rows survive crashes; the worker retries with back-off until ``sent`` or ``failed``.
    ``recipients`` is written once per attempt at most (a 100 000-member post's list is
    large): during an attempt the worker records after every SMTP transaction how far it
    got (``progress``, an offset into ``recipients``) and the few recipients before that
    offset still to do (``retry``: deferred, or not tried); the attempt's outcome then
    writes the recipients still to do into ``recipients`` (offset 0).  While a worker sends
    a row it holds a lease on it (``claimed_by``, ``claimed_until``); see
    :mod:`mtaplugin.outbox.store`.
    """

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_due", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    mail_from: Mapped[str] = mapped_column(String(320))
    recipients: Mapped[list[str]] = mapped_column(JSON)
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    #: what made it: "post", "notice", "release", ...
    kind: Mapped[str] = mapped_column(String(32), default="notice")
    mailing_list_id: Mapped[int | None] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="SET NULL"), default=None
    )
    status: Mapped[OutboxStatus] = enum_with_default(OutboxStatus.queued)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_error: Mapped[str] = mapped_column(Text, default="")
    #: the worker pass that holds the row (host, pid, a random part), or None
    claimed_by: Mapped[str | None] = mapped_column(String(128), default=None)
    #: when its lease runs out; after that, another worker may pick the row
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    #: a list post whose members each get their own copy (one-click unsubscribe link):
    #: what :mod:`mtaplugin.copies.transforms.personalize` needs; None: one copy for all
    personalize: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    #: a list copy sealed as it leaves: the list domain and the incoming results the ARC
    #: set records (:class:`mtaplugin.mailauth.service.SealInfo`); None: sent as it is
    seal: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    #: a list post's copy: the post's number, from which the worker decides whether its
    #: copies are VERPed (``[bounces] verp_delivery_interval``); None: not a list post
    post_number: Mapped[int | None] = mapped_column(Integer, default=None)
    #: how far the attempt under way got: ``recipients[:progress]`` are done, but ``retry``
    progress: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: recipients before ``progress`` still to do (deferred, or not tried by the MTA)
    retry: Mapped[list[str]] = mapped_column(JSON, default=list, server_default="[]")

    def to_do(self) -> list[str]:
        """The recipients still to do."""
        return list(self.retry) + list(self.recipients[self.progress :])


class FilteredPost(Base):
    """A post that content filtering kept from the members, on a list whose
    ``filter_action`` is ``preserve`` (Mailman's "bad" queue, in SQL)."""

    __tablename__ = "filtered_posts"

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int | None] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), index=True, default=None
    )
    message_id: Mapped[str] = mapped_column(String(998), default="")
    sender: Mapped[str] = mapped_column(String(320), default="")
    subject: Mapped[str] = mapped_column(Text, default="")
    reason: Mapped[str] = mapped_column(Text, default="")
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    filtered_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
