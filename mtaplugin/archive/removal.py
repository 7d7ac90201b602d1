"""Removing posts from the archive (an owner's or the site admin's decision): the post's
bytes, text, attachments, header fields, subject and author are blanked and ``removed``
set, so that its permalink answers 410 Gone and the mbox downloads leave it out.  The post
keeps its place (Message-ID, hash, date, thread), so its replies stay threaded under a
"removed" placeholder; its thread takes its title from the first post still there."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.archive import threads
from mtaplugin.errors import NotFound
from mtaplugin.i18n import _
from mtaplugin.model import MailingList
from mtaplugin.model.archive import ArchivedMessage


def blank(msg: ArchivedMessage, now: datetime) -> None:
    msg.removed = True
    msg.removed_at = now
    msg.raw = b""
    msg.text = ""
    msg.attachments = []
    msg.subject = ""
    msg.sender = ""
    msg.sender_name = ""


def _remove(session: Session, posts: list[ArchivedMessage], now: datetime) -> int:
    touched = set()
    for msg in posts:
        blank(msg, now)
        if msg.thread_id is not None:
            touched.add(msg.thread_id)
    session.flush()
    for tid in sorted(touched):
        threads.refresh(session, tid)
    return len(posts)


def remove(session: Session, mlist: MailingList, message_id_hash: str, now: datetime) -> int:
    """Remove one post, named by its hash; 1 (or 0 when it was removed already)."""
    msg = session.scalars(
        select(ArchivedMessage).where(
            ArchivedMessage.mailing_list_id == mlist.id,
            ArchivedMessage.message_id_hash == message_id_hash.strip().upper(),
        )
    ).first()
    if msg is None:
        raise NotFound(
            "HASH",
            _("no archived post {hash} in {list}").format(
                hash=message_id_hash, list=mlist.fqdn_listname
            ),
        )
    if msg.removed:
        return 0
    return _remove(session, [msg], now)


def remove_author(session: Session, mlist: MailingList, sender: str, now: datetime) -> int:
    """Remove every post of ``sender`` from the list's archive; how many."""
    posts = list(
        session.scalars(
            select(ArchivedMessage).where(
                ArchivedMessage.mailing_list_id == mlist.id,
                ArchivedMessage.sender == sender.strip().lower(),
                ArchivedMessage.removed.is_(False),
            )
        )
    )
    return _remove(session, posts, now)
