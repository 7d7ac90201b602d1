"""Threads, computed when a post is archived (never per page view).

A post's parent is the archived post named by its ``In-Reply-To``, else by the last
archived one of its ``References`` (the nearest ancestor the archive holds).  A post that
names none (mailers that drop them) joins the most recent thread with the same folded
subject (:func:`subject_key`: no list prefix, no ``Re:``, case and spaces folded) when its
subject says it is a reply and that thread had a post within :data:`SUBJECT_WINDOW`; its
parent is then that thread's first post.  Anything else starts a thread.

A reply archived before its parent (imports in any order, a parent held for moderation) is
re-parented when the parent arrives, as in JWZ's algorithm: a post whose nearest archived
ancestor is not its nearest named one waits (:class:`ArchiveWaiting`, one indexed row per
nearer Message-ID) for the nearer ones; when one is archived, its waiting posts become its
children, and moves with its replies into the new post's thread.  A new post with no parent
of its own joins the thread of the first such reply rather than starting one, so a thread's
address stays.  A thread left empty is deleted.

The pure part (:func:`subject_key`, :func:`is_reply`, :func:`ancestors`,
:func:`nearer_parent`) needs no database; :func:`place` and :func:`rebuild` do the rest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import bindparam, case, delete, func, select, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.util import identity_key

from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.model.archive import ArchivedMessage, ArchiveThread, ArchiveWaiting

#: how recent a thread must be for a reply that names no parent to join it by subject
SUBJECT_WINDOW = timedelta(days=30)

_REPLY = re.compile(r"^\s*(re|aw|sv|vs|antw|odp)\s*(\[\d+\]|\(\d+\))?\s*:\s*", re.IGNORECASE)
_PREFIX = re.compile(r"^\s*\[[^\]]{1,80}\]\s*")


def _strip(subject: str) -> tuple[str, bool]:
    text, reply = " ".join(subject.split()), False
    while True:
        before = text
        text = _PREFIX.sub("", text, count=1)
        m = _REPLY.match(text)
        if m:
            reply = True
            text = text[m.end() :]
        if text == before:
            return text.strip(), reply


def subject_key(subject: str) -> str:
    """The subject folded for threading: no ``[list]`` prefixes, no ``Re:``, lower case."""
    return _strip(subject)[0].casefold()[:255]


def thread_subject(subject: str) -> str:
    """A thread's title: the subject without list prefixes and ``Re:``."""
    return _strip(subject)[0]


def is_reply(subject: str) -> bool:
    return _strip(subject)[1]


def ancestors(in_reply_to: str, references: Sequence[str]) -> list[str]:
    """The Message-IDs a post answers, nearest first: In-Reply-To, then References from
    the last one back."""
    out: list[str] = []
    for mid in [in_reply_to, *reversed(references)]:
        if mid and mid not in out:
            out.append(mid)
    return out


def nearer_parent(
    in_reply_to: str, references: Sequence[str], current: str | None, candidate: str
) -> bool:
    """Whether ``candidate`` is a nearer ancestor of the post than its ``current`` parent
    (None: no parent, or one by subject only)."""
    order = ancestors(in_reply_to, references)
    if candidate not in order:
        return False
    if current is None or current not in order:
        return True
    return order.index(candidate) < order.index(current)


# --- in the database --------------------------------------------------------------------


def find_parent(session: Session, msg: ArchivedMessage) -> ArchivedMessage | None:
    """The nearest ancestor the archive holds (by the unique message-id hash index)."""
    order = ancestors(msg.in_reply_to, msg.references or [])
    if not order:
        return None
    hashes = {message_id_hash(mid): mid for mid in order}
    rows = session.scalars(
        select(ArchivedMessage).where(
            ArchivedMessage.mailing_list_id == msg.mailing_list_id,
            ArchivedMessage.message_id_hash.in_(list(hashes)),
            ArchivedMessage.id != msg.id,
        )
    ).all()
    found = {hashes[row.message_id_hash]: row for row in rows}
    for mid in order:
        if mid in found:
            return found[mid]
    return None


def wait_for_ancestors(
    session: Session, msg: ArchivedMessage, parent: str | None, fresh: bool = False
) -> None:
    """Note the ancestors of ``msg`` nearer than its ``parent`` (a Message-ID, None: no
    parent): when one is archived, it takes ``msg`` as its reply.  (``fresh``: a new post,
    nothing noted for it yet.)"""
    if not fresh:
        session.execute(delete(ArchiveWaiting).where(ArchiveWaiting.archived_message_id == msg.id))
    for mid in ancestors(msg.in_reply_to, msg.references or []):
        if mid == parent:
            break
        session.add(
            ArchiveWaiting(
                mailing_list_id=msg.mailing_list_id,
                wanted_hash=message_id_hash(mid),
                archived_message_id=msg.id,
            )
        )


def thread_by_subject(
    session: Session, msg: ArchivedMessage, key: str, when: datetime
) -> ArchiveThread | None:
    if not key or msg.in_reply_to or msg.references or not is_reply(msg.subject):
        return None
    return session.scalars(
        select(ArchiveThread)
        .where(
            ArchiveThread.mailing_list_id == msg.mailing_list_id,
            ArchiveThread.subject_key == key,
            ArchiveThread.last_post_at >= when - SUBJECT_WINDOW,
            ArchiveThread.started_at <= when + SUBJECT_WINDOW,
        )
        .order_by(ArchiveThread.last_post_at.desc())
        .limit(1)
    ).first()


def first_post(session: Session, thread_id: int) -> ArchivedMessage | None:
    return session.scalars(
        select(ArchivedMessage)
        .where(ArchivedMessage.thread_id == thread_id)
        .order_by(ArchivedMessage.parent_id.is_not(None), ArchivedMessage.date, ArchivedMessage.id)
        .limit(1)
    ).first()


def waiting_replies(session: Session, msg: ArchivedMessage) -> list[ArchivedMessage]:
    """The archived posts that name ``msg`` and would rather have it as their parent (those
    waiting for it, :class:`ArchiveWaiting`)."""
    return list(
        session.scalars(
            select(ArchivedMessage)
            .join(ArchiveWaiting, ArchiveWaiting.archived_message_id == ArchivedMessage.id)
            .where(
                ArchiveWaiting.mailing_list_id == msg.mailing_list_id,
                ArchiveWaiting.wanted_hash == msg.message_id_hash,
                ArchivedMessage.id != msg.id,
            )
            .order_by(ArchivedMessage.date, ArchivedMessage.id)
        ).unique()
    )


def _subtree(session: Session, root: ArchivedMessage) -> list[int]:
    """The ids of ``root`` and every archived reply under it, in its thread."""
    ids, frontier = [root.id], [root.id]
    while frontier:
        children = session.scalars(
            select(ArchivedMessage.id).where(
                ArchivedMessage.parent_id.in_(frontier), ArchivedMessage.id.not_in(ids)
            )
        ).all()
        frontier = list(children)
        ids.extend(frontier)
    return ids


def refresh(session: Session, thread_id: int) -> None:
    """Recount a thread (posts, first and last post, subject), or delete it when empty."""
    session.flush()
    count, first, last = session.execute(
        select(
            func.count(ArchivedMessage.id),
            func.min(ArchivedMessage.date),
            func.max(ArchivedMessage.date),
        ).where(ArchivedMessage.thread_id == thread_id)
    ).one()
    thread = session.get(ArchiveThread, thread_id)
    if thread is None:
        return
    if not count:
        session.delete(thread)
        session.flush()
        return
    thread.posts = count
    thread.started_at = first or thread.started_at
    thread.last_post_at = last or thread.last_post_at
    # its title: the first post still there (a removed post's subject is gone)
    root = session.scalars(
        select(ArchivedMessage)
        .where(ArchivedMessage.thread_id == thread_id, ArchivedMessage.removed.is_(False))
        .order_by(ArchivedMessage.parent_id.is_not(None), ArchivedMessage.date, ArchivedMessage.id)
        .limit(1)
    ).first()
    subject = root.subject if root is not None else ""
    thread.subject = thread_subject(subject)
    thread.subject_key = subject_key(subject)


def _mid(session: Session, pk: int | None) -> str | None:
    if pk is None:
        return None
    return session.scalar(select(ArchivedMessage.message_id).where(ArchivedMessage.id == pk))


def _chain(session: Session, msg: ArchivedMessage) -> set[int]:
    """The ids of ``msg``'s parent, its parent's parent…: they may not become its replies
    (a loop of References)."""
    seen: set[int] = set()
    pk = msg.parent_id
    while pk is not None and pk not in seen:
        seen.add(pk)
        pk = session.scalar(select(ArchivedMessage.parent_id).where(ArchivedMessage.id == pk))
    return seen


_STARTED, _LAST = ArchiveThread.started_at, ArchiveThread.last_post_at
_AT = bindparam("at", type_=_STARTED.type)
# Built once (the worker counts in every post that joins a thread).
_COUNT_IN = (
    update(ArchiveThread)
    .where(ArchiveThread.id == bindparam("thread"))
    .values(
        posts=ArchiveThread.posts + 1,
        started_at=case((_STARTED > _AT, _AT), else_=_STARTED),
        last_post_at=case((_LAST < _AT, _AT), else_=_LAST),
    )
)


def count_in(session: Session, thread_id: int, when: datetime) -> None:
    """The usual post: its thread's counts move by one, no recount -- in SQL
    (``posts = posts + 1``), so that two posts to one thread archived at the same moment by
    two transactions are both counted."""
    session.connection().execute(_COUNT_IN, {"thread": thread_id, "at": when})
    thread = session.identity_map.get(identity_key(ArchiveThread, thread_id))
    if thread is not None:
        session.expire(thread, ["posts", "started_at", "last_post_at"])


def place(session: Session, msg: ArchivedMessage) -> ArchiveThread:
    """Give a newly archived (flushed) post its parent and thread; adopt its waiting
    replies.  Returns its thread."""
    when = msg.date or msg.archived_at
    key = subject_key(msg.subject)
    parent = find_parent(session, msg)
    thread: ArchiveThread | None = None
    if parent is not None and parent.thread_id is not None:
        msg.parent_id = parent.id
        thread = session.get(ArchiveThread, parent.thread_id)
    wait_for_ancestors(session, msg, parent.message_id if parent is not None else None, fresh=True)
    waiting = waiting_replies(session, msg)
    replies: list[ArchivedMessage] = []
    if waiting:
        above = _chain(session, msg)
        replies = [
            r
            for r in waiting
            if r.id not in above
            and nearer_parent(
                r.in_reply_to, r.references or [], _mid(session, r.parent_id), msg.message_id
            )
        ]
    if thread is None and parent is None and replies and replies[0].thread_id is not None:
        thread = session.get(ArchiveThread, replies[0].thread_id)
    if thread is None and parent is None:
        thread = thread_by_subject(session, msg, key, when)
        if thread is not None:
            root = first_post(session, thread.id)
            msg.parent_id = root.id if root is not None else None
    if thread is None:
        thread = ArchiveThread(
            mailing_list_id=msg.mailing_list_id,
            subject=thread_subject(msg.subject),
            subject_key=key,
            started_at=when,
            last_post_at=when,
            posts=0,
        )
        session.add(thread)
        session.flush()
    msg.thread_id = thread.id
    if not waiting:
        count_in(session, thread.id, when)
        return thread
    touched = {thread.id}
    session.execute(
        delete(ArchiveWaiting).where(
            ArchiveWaiting.mailing_list_id == msg.mailing_list_id,
            ArchiveWaiting.wanted_hash == msg.message_id_hash,
        )
    )
    for child in replies:
        child.parent_id = msg.id
        wait_for_ancestors(session, child, msg.message_id)
        if child.thread_id != thread.id:
            if child.thread_id is not None:
                touched.add(child.thread_id)
            moved = _subtree(session, child)
            session.execute(
                update(ArchivedMessage)
                .where(ArchivedMessage.id.in_(moved))
                .values(thread_id=thread.id)
                .execution_options(synchronize_session="fetch")
            )
    for tid in sorted(touched):
        refresh(session, tid)
    return thread


def rebuild(session: Session, list_id: int) -> int:
    """Thread a list's archive again from nothing, oldest post first; the threads made."""
    session.execute(
        update(ArchivedMessage)
        .where(ArchivedMessage.mailing_list_id == list_id)
        .values(thread_id=None, parent_id=None)
        .execution_options(synchronize_session="fetch")
    )
    session.execute(delete(ArchiveWaiting).where(ArchiveWaiting.mailing_list_id == list_id))
    session.execute(delete(ArchiveThread).where(ArchiveThread.mailing_list_id == list_id))
    session.flush()
    posts = session.scalars(
        select(ArchivedMessage)
        .where(ArchivedMessage.mailing_list_id == list_id)
        .order_by(ArchivedMessage.date, ArchivedMessage.id)
    ).all()
    for msg in posts:
        place(session, msg)
        session.flush()
    return (
        session.scalar(
            select(func.count(ArchiveThread.id)).where(ArchiveThread.mailing_list_id == list_id)
        )
        or 0
    )
