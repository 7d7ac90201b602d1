"""The archive as mbox files, and mbox files read back.

Written as *mboxrd*: each post starts with a ``From_`` line (``From sender date``), and a
body line that starts with ``From `` after any number of ``>`` gets one ``>`` more, so a
reader undoes it exactly (one ``>`` less).  Line ends are LF; a removed post is left out.

Read: mboxrd and mboxo files, Pipermail's (its monthly ``.txt`` files write addresses as
``anne at example.com``, turned back here) and HyperKitty's downloads.  A post starts at a
line that looks like a ``From_`` line (``From`` , an address, a date).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import BinaryIO

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from mtaplugin.model.archive import ArchivedMessage

_QUOTED_FROM = re.compile(rb"^(>*From )")
_UNQUOTE = re.compile(rb"^>(>*From )")
#: ``From anne@example.com Mon Jan  1 10:00:00 2024`` (Pipermail: ``anne at example.com``)
_FROM_LINE = re.compile(
    rb"^From (?P<who>\S+(?: at \S+)?)\s+(?P<when>(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b.*)$"
)
_PIPERMAIL_FROM = re.compile(rb"^(From:[^\n]*?)(\S+) at (\S+\.\S+)", re.IGNORECASE)


def from_line(msg: ArchivedMessage) -> bytes:
    when = (msg.date or msg.archived_at).astimezone(UTC)
    sender = msg.sender if msg.sender and " " not in msg.sender else "MAILER-DAEMON"
    return f"From {sender} {when.strftime('%a %b %d %H:%M:%S %Y')}\n".encode()


def quote(raw: bytes) -> bytes:
    """One post's bytes for an mboxrd file: LF line ends, ``From`` lines quoted, a final
    line end."""
    lines = raw.replace(b"\r\n", b"\n").split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return b"".join(_QUOTED_FROM.sub(rb">\1", line) + b"\n" for line in lines)


def export(posts: Iterable[ArchivedMessage]) -> Iterator[bytes]:
    """An mboxrd file of ``posts``, one post at a time (removed ones left out)."""
    for msg in posts:
        if msg.removed:
            continue
        yield from_line(msg) + quote(msg.raw) + b"\n"


def _posts(session: Session, *where: ColumnElement[bool]) -> Iterator[ArchivedMessage]:
    """The archived posts ``where`` says, in date order, read 200 at a time."""
    query = (
        select(ArchivedMessage)
        .where(*where)
        .order_by(ArchivedMessage.date, ArchivedMessage.id)
        .execution_options(yield_per=200)
    )
    return iter(session.scalars(query))


def month_posts(session: Session, list_id: int, year: int, month: int) -> Iterator[ArchivedMessage]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return _posts(
        session,
        ArchivedMessage.mailing_list_id == list_id,
        ArchivedMessage.date >= start,
        ArchivedMessage.date < end,
    )


def thread_posts(session: Session, thread_id: int) -> Iterator[ArchivedMessage]:
    return _posts(session, ArchivedMessage.thread_id == thread_id)


def list_posts(session: Session, list_id: int) -> Iterator[ArchivedMessage]:
    return _posts(session, ArchivedMessage.mailing_list_id == list_id)


# --- reading -----------------------------------------------------------------------------


def from_line_date(line: bytes) -> datetime | None:
    """The date of a ``From_`` line, if it has a readable one."""
    m = _FROM_LINE.match(line.rstrip(b"\r\n"))
    if not m:
        return None
    text = m.group("when").decode("ascii", "replace").split()
    # asctime: Mon Jan  1 10:00:00 2024 (sometimes with a zone after the time)
    try:
        day, mon, num, clock, year = text[0], text[1], text[2], text[3], text[-1]
        when = parsedate_to_datetime(f"{day}, {num} {mon} {year} {clock} +0000")
    except (IndexError, ValueError, TypeError):
        return None
    return when


def _unpipermail(head: bytes) -> bytes:
    """Pipermail's ``From: anne at example.com (Anne)`` back to an address."""
    return _PIPERMAIL_FROM.sub(rb"\1\2@\3", head, count=1)


def _finish(lines: list[bytes]) -> bytes:
    body = b"".join(_UNQUOTE.sub(rb"\1", line) for line in lines)
    if body.endswith(b"\n\n"):
        body = body[:-1]  # the blank line before the next From_ line
    end = body.find(b"\n\n")
    end = len(body) if end < 0 else end
    return _unpipermail(body[:end]) + body[end:]


def split(stream: BinaryIO) -> Iterator[tuple[bytes, datetime | None]]:
    """The posts of an mbox file: (bytes, date of its ``From_`` line)."""
    lines: list[bytes] = []
    when: datetime | None = None
    started = False
    previous_blank = True
    for line in stream:
        line = line.replace(b"\r\n", b"\n")
        if previous_blank and _FROM_LINE.match(line.rstrip(b"\n")):
            if started and lines:
                yield _finish(lines), when
            lines, when, started = [], from_line_date(line), True
            previous_blank = False
            continue
        if started:
            lines.append(line if line.endswith(b"\n") else line + b"\n")
        previous_blank = line.strip() == b""
    if started and lines:
        yield _finish(lines), when
