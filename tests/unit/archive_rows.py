"""Archived posts and threads written straight into the database, for the tests of search
and of the archive's pages (the archive store of mtaplugin.archive.store writes the same
rows when it archives a post)."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from typing import Any, NamedTuple

from sqlalchemy.orm import Session

from mtaplugin.model import ArchivedMessage, ArchiveThread, MailingList

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def message_id_hash(message_id: str) -> str:
    """Mailman 3's name of an archived post: base32 of the SHA-1 of its Message-ID."""
    digest = hashlib.sha1(message_id.strip().strip("<>").encode()).digest()
    return base64.b32encode(digest).decode()


def thread(
    s: Session, mlist: MailingList, subject: str, started: datetime = START
) -> ArchiveThread:
    row = ArchiveThread(
        mailing_list_id=mlist.id,
        subject=subject,
        subject_key=subject.lower(),
        started_at=started,
        last_post_at=started,
        posts=0,
    )
    s.add(row)
    s.flush()
    return row


def post(
    s: Session,
    mlist: MailingList,
    subject: str,
    body: str,
    *,
    sender: str = "anne@example.com",
    name: str = "Anne Example",
    date: datetime = START,
    in_thread: ArchiveThread | None = None,
    parent: ArchivedMessage | None = None,
    attachments: list[dict[str, Any]] | None = None,
    parts: list[tuple[str, str, bytes]] | None = None,
    message_id: str = "",
) -> ArchivedMessage:
    """An archived post (and its thread: a new one unless ``in_thread`` or ``parent``);
    ``parts`` are attachments ``(name, content type, bytes)`` put into the raw message."""
    if parent is not None and in_thread is None:
        in_thread = s.get(ArchiveThread, parent.thread_id)
    if in_thread is None:
        in_thread = thread(s, mlist, subject, date)
    message_id = message_id or f"{abs(hash((subject, body, date, sender)))}@example.com"
    msg = EmailMessage()
    msg["From"] = f"{name} <{sender}>"
    msg["To"] = mlist.fqdn_listname
    msg["Subject"] = subject
    msg["Date"] = format_datetime(date)
    msg["Message-ID"] = f"<{message_id}>"
    if parent is not None:
        msg["In-Reply-To"] = f"<{parent.message_id}>"
    msg.set_content(body)
    listed = list(attachments or [])
    for filename, ctype, data in parts or []:
        maintype, subtype = ctype.split("/", 1)
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    # "part": the attachment's place in the message's walk() order
    for n, part in enumerate(msg.walk()):
        if part.get_filename():
            payload = part.get_payload(decode=True) or b""
            listed.append(
                {
                    "name": part.get_filename(),
                    "content_type": part.get_content_type(),
                    "size": len(payload),
                    "part": n,
                }
            )
    row = ArchivedMessage(
        mailing_list_id=mlist.id,
        message_id=message_id,
        message_id_hash=message_id_hash(message_id),
        in_reply_to=parent.message_id if parent is not None else "",
        references=[parent.message_id] if parent is not None else [],
        sender=sender,
        sender_name=name,
        subject=subject,
        date=date,
        archived_at=date,
        raw=bytes(msg),
        text=body,
        attachments=listed,
        thread_id=in_thread.id,
        parent_id=parent.id if parent is not None else None,
    )
    s.add(row)
    s.flush()
    in_thread.posts += 1
    in_thread.last_post_at = max(in_thread.last_post_at, date)
    s.flush()
    return row


class Seed(NamedTuple):
    """One post of a test's archive, for :func:`seed`: ``by`` its author ("Name
    <address>"), ``after`` how long after :data:`START`, ``parent`` the place in the seed
    of the post it answers, ``parts`` its attachments ``(name, content type, bytes)``."""

    subject: str
    body: str
    by: str = "Anne Example <anne@example.com>"
    after: timedelta = timedelta(0)
    parent: int | None = None
    parts: tuple[tuple[str, str, bytes], ...] = ()


def seed(s: Session, mlist: MailingList, *posts: Seed) -> list[ArchivedMessage]:
    """The ``posts`` archived in ``mlist``, in their order (a reply after the post it
    answers)."""
    rows: list[ArchivedMessage] = []
    for p in posts:
        name, sender = parseaddr(p.by)
        rows.append(
            post(
                s,
                mlist,
                p.subject,
                p.body,
                sender=sender,
                name=name,
                date=START + p.after,
                parent=rows[p.parent] if p.parent is not None else None,
                parts=list(p.parts),
            )
        )
    return rows
