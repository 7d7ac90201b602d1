"""The list archive (Mailman 3's HyperKitty, in the list database): each archived post
and the threads they make.

A post is archived at the archive-copy point (before footers and DMARC changes), in the
same database transaction as the decision that accepted it, so an archived post is never
lost and never archived twice (``message_id_hash`` is unique per list).  Threads are
computed when a post is archived, not per page view: ``thread_id`` names the thread's
:class:`ArchiveThread`, ``parent_id`` the archived post it answers (None for a thread's
first post and for a post whose parent is not archived).
"""

from __future__ import annotations

import zlib
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.model.base import Base, UTCDateTime, utcnow

#: marks a compressed post in ``archived_messages.raw`` (a post never starts with NUL;
#: rows written before compression are read as they are)
PACKED = b"\x00z"


def pack(raw: bytes) -> bytes:
    """``raw`` compressed for the archive (zlib: mail text shrinks to a third or less)."""
    return PACKED + zlib.compress(raw, 6) if raw else b""


def unpack(stored: bytes | None) -> bytes:
    if not stored:
        return b""
    if stored.startswith(PACKED):
        try:
            return zlib.decompress(stored[len(PACKED) :])
        except zlib.error:
            pass
    return bytes(stored)


class ArchiveThread(Base):
    """One thread of a list's archive: its subject (without the list prefix and Re:),
    when it started, its last post and how many posts it holds (for "recent" and "most
    active" threads without a scan)."""

    __tablename__ = "archive_threads"
    __table_args__ = (
        Index("ix_archive_threads_recent", "mailing_list_id", "last_post_at"),
        Index("ix_archive_threads_subject", "mailing_list_id", "subject_key"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int] = mapped_column(ForeignKey("mailing_lists.id", ondelete="CASCADE"))
    subject: Mapped[str] = mapped_column(Text, default="")
    #: the subject folded for the subject fallback of threading (lower case, no prefix, no Re:)
    subject_key: Mapped[str] = mapped_column(String(255), default="")
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_post_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    posts: Mapped[int] = mapped_column(Integer, default=0)


class ArchivedMessage(Base):
    __tablename__ = "archived_messages"
    __table_args__ = (
        Index("ix_archived_list_hash", "mailing_list_id", "message_id_hash", unique=True),
        Index("ix_archived_list_date", "mailing_list_id", "date"),
        Index("ix_archived_thread", "thread_id", "date"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int] = mapped_column(ForeignKey("mailing_lists.id", ondelete="CASCADE"))
    message_id: Mapped[str] = mapped_column(String(998))
    #: base32 SHA1 of the Message-ID, as Mailman and HyperKitty name archived posts
    message_id_hash: Mapped[str] = mapped_column(String(32))
    in_reply_to: Mapped[str] = mapped_column(String(998), default="")
    #: the Message-IDs of References:, oldest first
    references: Mapped[list[str]] = mapped_column(JSON, default=list)
    sender: Mapped[str] = mapped_column(String(320), default="")
    #: the display name of From:
    sender_name: Mapped[str] = mapped_column(String(320), default="")
    subject: Mapped[str] = mapped_column(Text, default="")
    date: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    archived_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: the post as it came, compressed (read and write it as :attr:`raw`)
    stored_raw: Mapped[bytes] = mapped_column("raw", LargeBinary)
    #: the post's text as read (text/plain parts, HTML converted), for pages and search
    text: Mapped[str] = mapped_column(Text, default="")
    #: the attachments: [{"name", "content_type", "size", "part"}]
    attachments: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    thread_id: Mapped[int | None] = mapped_column(
        ForeignKey("archive_threads.id", ondelete="SET NULL"), default=None
    )
    parent_id: Mapped[int | None] = mapped_column(
        ForeignKey("archived_messages.id", ondelete="SET NULL"), default=None
    )
    #: removed by an owner or the site admin: the permalink answers 410, the text is gone
    removed: Mapped[bool] = mapped_column(Boolean, default=False)
    removed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)

    @property
    def raw(self) -> bytes:
        """The post's bytes as they came."""
        return unpack(self.stored_raw)

    @raw.setter
    def raw(self, value: bytes) -> None:
        self.stored_raw = pack(value)


class ArchiveWaiting(Base):
    """An archived post waiting for an ancestor the archive does not hold yet (JWZ's empty
    container): one row per Message-ID nearer than the post's present parent, so that the
    ancestor, when it is archived, finds the replies to take by one indexed look-up
    (:mod:`mtaplugin.archive.threads`) instead of reading every post's References."""

    __tablename__ = "archive_waiting"
    __table_args__ = (Index("ix_archive_waiting_wanted", "mailing_list_id", "wanted_hash"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int] = mapped_column(ForeignKey("mailing_lists.id", ondelete="CASCADE"))
    #: the message-id hash of the ancestor waited for
    wanted_hash: Mapped[str] = mapped_column(String(32))
    archived_message_id: Mapped[int] = mapped_column(
        ForeignKey("archived_messages.id", ondelete="CASCADE"), index=True
    )
