"""What the archive's pages show, read from the archived rows: a list's recent and most
active threads and top posters, its months, a month's threads, a thread as a tree of
replies, a post's text in plain and quoted blocks, and addresses as anonymous visitors
see them.  Pure reads and pure functions: the pages (mtaplugin.web.pages.archive) only
render them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, extract, func, select
from sqlalchemy.orm import Session

from mtaplugin.model import ArchivedMessage, ArchiveThread, MailingList

#: replies deeper than this are shown at this depth (a page stays readable)
MAX_DEPTH = 8
_ADDRESS = re.compile(r"([A-Za-z0-9._%+\-=]+)@([A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+)")


def _when() -> ColumnElement[Any]:
    return func.coalesce(ArchivedMessage.date, ArchivedMessage.archived_at)


def month_range(year: int, month: int) -> tuple[datetime, datetime]:
    """The first instant of the month and of the next one (UTC); ValueError if none."""
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + 1, 1, 1, tzinfo=UTC) if month == 12 else start.replace(month=month + 1)
    return start, end


def _visible(thread: type[ArchiveThread] = ArchiveThread) -> ColumnElement[bool]:
    """The thread holds a post not removed (a thread of removed posts is not listed: its
    subject is the removed post's)."""
    return (
        select(ArchivedMessage.id)
        .where(ArchivedMessage.thread_id == thread.id, ArchivedMessage.removed.is_(False))
        .exists()
    )


def recent_threads(s: Session, mlist: MailingList, limit: int = 10) -> list[ArchiveThread]:
    return list(
        s.scalars(
            select(ArchiveThread)
            .where(ArchiveThread.mailing_list_id == mlist.id, _visible())
            .order_by(ArchiveThread.last_post_at.desc(), ArchiveThread.id.desc())
            .limit(limit)
        )
    )


def active_threads(
    s: Session, mlist: MailingList, now: datetime, days: int = 30, limit: int = 10
) -> list[ArchiveThread]:
    """The threads with most posts among those with a post in the last ``days``."""
    return list(
        s.scalars(
            select(ArchiveThread)
            .where(
                ArchiveThread.mailing_list_id == mlist.id,
                ArchiveThread.posts > 1,
                ArchiveThread.last_post_at >= now - timedelta(days=days),
                _visible(),
            )
            .order_by(ArchiveThread.posts.desc(), ArchiveThread.last_post_at.desc())
            .limit(limit)
        )
    )


@dataclass(frozen=True)
class Poster:
    sender: str
    name: str
    posts: int


def top_posters(
    s: Session, mlist: MailingList, now: datetime, days: int = 30, limit: int = 10
) -> list[Poster]:
    rows = s.execute(
        select(
            ArchivedMessage.sender,
            func.max(ArchivedMessage.sender_name),
            func.count(ArchivedMessage.id).label("n"),
        )
        .where(
            ArchivedMessage.mailing_list_id == mlist.id,
            # the indexed date (the archive store always gives a post one)
            ArchivedMessage.date >= now - timedelta(days=days),
            ArchivedMessage.removed.is_(False),
        )
        .group_by(ArchivedMessage.sender)
        .order_by(func.count(ArchivedMessage.id).desc(), ArchivedMessage.sender)
        .limit(limit)
    )
    return [Poster(sender, name or "", int(n)) for sender, name, n in rows]


@dataclass(frozen=True)
class Month:
    year: int
    month: int


def months(s: Session, mlist: MailingList) -> list[Month]:
    """The months that hold posts, newest first.  Read from the index of the posts' dates
    alone (a removed post still has its date: a month of removed posts only is listed,
    and shows none)."""
    year = extract("year", ArchivedMessage.date)
    month = extract("month", ArchivedMessage.date)
    rows = s.execute(
        select(year, month)
        .where(ArchivedMessage.mailing_list_id == mlist.id, ArchivedMessage.date.is_not(None))
        .group_by(year, month)
        .order_by(year.desc(), month.desc())
    )
    return [Month(int(y), int(m)) for y, m in rows]


def month_threads(s: Session, mlist: MailingList, year: int, month: int) -> list[ArchiveThread]:
    """The threads with a post in the month, by their first post in it."""
    start, end = month_range(year, month)
    first = (
        select(ArchivedMessage.thread_id, func.min(_when()).label("first"))
        .where(
            ArchivedMessage.mailing_list_id == mlist.id,
            ArchivedMessage.removed.is_(False),
            # the indexed date: only the month's posts are read
            ArchivedMessage.date >= start,
            ArchivedMessage.date < end,
        )
        .group_by(ArchivedMessage.thread_id)
        .subquery()
    )
    return list(
        s.scalars(
            select(ArchiveThread)
            .join(first, first.c.thread_id == ArchiveThread.id)
            .order_by(first.c.first.desc(), ArchiveThread.id.desc())
        )
    )


def month_messages(s: Session, mlist: MailingList, year: int, month: int) -> list[ArchivedMessage]:
    """The month's posts (not removed), oldest first (for its mbox)."""
    start, end = month_range(year, month)
    return list(
        s.scalars(
            select(ArchivedMessage)
            .where(
                ArchivedMessage.mailing_list_id == mlist.id,
                ArchivedMessage.removed.is_(False),
                ArchivedMessage.date >= start,
                ArchivedMessage.date < end,
            )
            .order_by(_when(), ArchivedMessage.id)
        )
    )


def thread_messages(s: Session, thread: ArchiveThread) -> list[ArchivedMessage]:
    """Every post of the thread (removed ones too: the tree keeps its shape), oldest first."""
    return list(
        s.scalars(
            select(ArchivedMessage)
            .where(ArchivedMessage.thread_id == thread.id)
            .order_by(_when(), ArchivedMessage.id)
        )
    )


@dataclass(frozen=True)
class Node:
    message: ArchivedMessage
    depth: int


def tree(messages: list[ArchivedMessage]) -> list[Node]:
    """The thread's posts depth first, each reply under the post it answers (a post whose
    parent is not in the thread starts a branch of its own); order by date among siblings."""
    ids = {m.id for m in messages}
    children: dict[int | None, list[ArchivedMessage]] = {}
    for m in messages:
        parent = m.parent_id if m.parent_id in ids and m.parent_id != m.id else None
        children.setdefault(parent, []).append(m)
    out: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[ArchivedMessage, int]] = [(m, 0) for m in reversed(children.get(None, []))]
    while stack:
        m, depth = stack.pop()
        if m.id in seen:
            continue
        seen.add(m.id)
        out.append(Node(m, min(depth, MAX_DEPTH)))
        stack.extend((c, depth + 1) for c in reversed(children.get(m.id, [])))
    # a loop of parents (bad data) has no root: show what is left, flat
    out.extend(Node(m, 0) for m in messages if m.id not in seen)
    return out


@dataclass(frozen=True)
class Block:
    quoted: bool
    text: str

    @property
    def lines(self) -> int:
        return self.text.count("\n") + 1


def blocks(text: str) -> list[Block]:
    """The text in runs of quoted lines (``>``) and of the rest, for folding the quotes."""
    out: list[Block] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        quoted = line.lstrip().startswith(">")
        if out and out[-1].quoted == quoted:
            out[-1] = Block(quoted, out[-1].text + "\n" + line)
        else:
            out.append(Block(quoted, line))
    trimmed = [Block(b.quoted, b.text.strip("\n")) for b in out]
    return [b for b in trimmed if b.quoted or b.text.strip()]


def obscure(address: str) -> str:
    """``anne@example.com`` -> ``anne@…`` (what an anonymous visitor sees)."""
    local, at, _domain = address.partition("@")
    return f"{local}@…" if at else address


def obscure_text(text: str) -> str:
    """Every address in ``text`` obscured (for anonymous visitors)."""
    return _ADDRESS.sub(lambda m: f"{m.group(1)}@…", text)


def author(message: ArchivedMessage, show_address: bool) -> str:
    """Who wrote the post: name and address, or the name alone (the obscured address when
    there is no name) for anonymous visitors."""
    if show_address:
        if message.sender_name and message.sender:
            return f"{message.sender_name} <{message.sender}>"
        return message.sender or message.sender_name
    return obscure_text(message.sender_name) if message.sender_name else obscure(message.sender)
