"""Archiving a post: at the archive-copy point (the bytes the digests and the news gateway
get, before footers and DMARC changes), in the session of the decision's transaction, so
that an archived post is never lost (no 250 without it) and never archived twice.

- :func:`archives` -- whether the list keeps this post (``archive_policy`` not ``never``;
  no ``X-No-Archive: yes`` nor ``Archive: no``).
- :func:`archive` -- store it (once: a post whose Message-ID the list's archive holds
  already is not stored again) and thread it (:mod:`mtaplugin.archive.filing`).  Two
  transactions archiving the same Message-ID at the same moment: the second fails on the
  unique index and its decision answers 4xx; the MTA retries and finds it archived.
"""

from __future__ import annotations

from datetime import datetime
from email.message import Message

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.archive import filing
from mtaplugin.archive.reading import no_archive, parse, read
from mtaplugin.enums import ArchivePolicy
from mtaplugin.model import MailingList
from mtaplugin.model.archive import ArchivedMessage
from mtaplugin.vocabulary.header_block import header_end


def archives(mlist: MailingList, headers: Message) -> bool:
    """Whether ``mlist`` keeps the post whose header fields are ``headers``."""
    return mlist.archive_policy is not ArchivePolicy.never and not no_archive(headers)


def find(session: Session, list_id: int, message_id_hash: str) -> ArchivedMessage | None:
    return session.scalars(
        select(ArchivedMessage).where(
            ArchivedMessage.mailing_list_id == list_id,
            ArchivedMessage.message_id_hash == message_id_hash,
        )
    ).first()


def archive(
    session: Session,
    mlist: MailingList,
    raw: bytes,
    now: datetime,
    *,
    check: bool = True,
    date_fallback: datetime | None = None,
) -> int | None:
    """Archive the archive copy ``raw`` of a post of ``mlist``: the archived post's id, or
    None when the list does not keep it (``check``) or keeps it already.  ``date_fallback``:
    the post's date when its Date: is missing or absurd (default: ``now``)."""
    if check and not archives(mlist, parse(raw[: header_end(raw)])):
        return None
    reading = read(raw, now, mlist.mail_host, date_fallback)
    return filing.file(session, mlist.id, raw, reading, now)


def reread(session: Session, list_id: int, now: datetime) -> int:
    """Read every (not removed) archived post of a list again from its bytes: text,
    attachments, author, subject, date, threading fields (after a better reader); how
    many.  The threads are then to be rebuilt (:func:`mtaplugin.archive.threads.rebuild`)."""
    query = select(ArchivedMessage).where(
        ArchivedMessage.mailing_list_id == list_id, ArchivedMessage.removed.is_(False)
    )
    n = 0
    for msg in session.scalars(query.execution_options(yield_per=200)):
        r = read(msg.raw, msg.archived_at or now)
        msg.in_reply_to = r.in_reply_to[:998]
        msg.references = r.references
        msg.sender, msg.sender_name, msg.subject = r.sender, r.sender_name, r.subject
        msg.date = r.date or msg.date
        msg.text, msg.attachments = r.text, r.attachments
        n += 1
    session.flush()
    return n
