"""Mailman 2.1's Pipermail links, read: which post, month or archive a
``/pipermail/LIST/...`` path names.

Pipermail numbers the posts of a list's archive in the order it archived them, which is
the order of the list's mbox (``bin/arch`` rebuilds the pages from it), from 000000 up.
:func:`number_posts` keeps those numbers when the mbox is imported, so that
``/pipermail/LIST/2019-March/000123.html`` leads to the same post
(:mod:`mtaplugin.web.pages.legacy_archive`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import BinaryIO

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.archive import mbox
from mtaplugin.archive.reading import read
from mtaplugin.model import MailingList, PipermailNumber

BATCH = 500

#: Pipermail's month names, in English whatever the list's language (its paths)
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)

_MONTH = re.compile(r"^(\d{4})-([A-Za-z]+)$")
_QUARTER = re.compile(r"^(\d{4})q([1-4])$")
_ARTICLE = re.compile(r"^(\d{6})\.html$")


def month_of(period: str) -> tuple[int, int] | None:
    """``2019-March`` -> (2019, 3); a quarter (``2019q2``) -> its first month; None for
    anything else (weekly and daily archives lead to the archive's front page)."""
    m = _MONTH.match(period)
    if m and m.group(2).capitalize() in MONTHS:
        return int(m.group(1)), MONTHS.index(m.group(2).capitalize()) + 1
    q = _QUARTER.match(period)
    if q:
        return int(q.group(1)), (int(q.group(2)) - 1) * 3 + 1
    return None


def article_of(page: str) -> int | None:
    """``012345.html`` -> 12345; None for the index pages (thread.html, date.html, ...)."""
    m = _ARTICLE.match(page)
    return int(m.group(1)) if m else None


def number_posts(
    sessions: sessionmaker[Session],
    list_id: int,
    stream: BinaryIO,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Keep Pipermail's number of each post of the mbox ``stream`` (its place in it, from
    0) for the list ``list_id``; numbers kept already are left as they are (an import run
    again changes nothing); how many posts were read."""
    now = datetime.now(UTC)
    count = 0
    with sessions() as s:
        mlist = s.get(MailingList, list_id)
        assert mlist is not None
        host = mlist.mail_host
        known = set(
            s.scalars(
                select(PipermailNumber.number).where(PipermailNumber.mailing_list_id == list_id)
            )
        )
    rows: list[PipermailNumber] = []
    for number, (raw, when) in enumerate(mbox.split(stream)):
        count += 1
        if number not in known:
            digest = read(raw, now, host, when).message_id_hash
            rows.append(
                PipermailNumber(mailing_list_id=list_id, number=number, message_id_hash=digest)
            )
        if len(rows) >= BATCH:
            _store(sessions, rows)
            rows = []
            if progress is not None:
                progress(count)
    _store(sessions, rows)
    if progress is not None:
        progress(count)
    return count


def _store(sessions: sessionmaker[Session], rows: list[PipermailNumber]) -> None:
    if rows:
        with sessions.begin() as s:
            s.add_all(rows)


def message_hash(session: Session, list_id: int, number: int) -> str | None:
    return session.scalar(
        select(PipermailNumber.message_id_hash).where(
            PipermailNumber.mailing_list_id == list_id, PipermailNumber.number == number
        )
    )
