"""The worker's way of filing a post (mtaplugin.archive.filing: the usual post in a few
Core statements) threads every post as the general path (an ORM object and
``threads.place``) does: the same archived posts, parents, threads and their counts,
subjects and dates, and the same replies waiting for their ancestors -- on SQLite and
PostgreSQL, through replies before their parents, the subject fallback, a post naming
itself, a loop of References and a repeated Message-ID."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.archive import filing, store
from mtaplugin.archive.reading import Reading
from mtaplugin.model import MailingList
from mtaplugin.model.archive import ArchivedMessage, ArchiveThread, ArchiveWaiting
from tests.helpers import unique
from tests.unit.sites import Roster, add_domain
from tests.unit.test_archive_store import NOW, mail

H = timedelta(hours=1)

#: (Message-ID, subject, In-Reply-To, References, hours after NOW): in archiving order
POSTS: list[tuple[str, str, str, str, int]] = [
    ("p1", "[Team] plan", "", "", 0),
    ("p2", "Re: [Team] plan", "p1", "p1", 1),
    ("p4", "Re: plan", "p3", "p1 p3", 3),  # p3 is not archived yet: p4 waits for it
    ("p3", "Re: plan", "p1", "p1", 2),  # p4 becomes its reply
    ("q2", "Re: question", "q1", "q1", 5),  # its parent is missing: a thread of its own
    ("q3", "Re: question", "q2", "q1 q2", 6),
    ("q1", "question", "", "", 4),  # arrives last: q2's thread takes it
    ("s1", "Lunch", "", "", 7),
    ("s2", "RE: [Team] lunch", "", "", 8),  # by subject only
    ("x1", "myself", "x1", "", 9),  # names itself
    ("l1", "loop", "", "l2", 10),
    ("l2", "Re: loop", "l1", "l1", 11),
    ("e2", "Re: early", "e1", "e1", -5),  # dated before its thread's first post
    ("e1", "early", "", "", 0),
    ("p1", "again", "", "", 12),  # a repeat
    ("n1", "", "", "", 13),  # no subject
]


def general(session: Session, list_id: int, raw: bytes, reading: Reading, now: datetime) -> Any:
    """The general path for every post (as archive() was before filing)."""
    held = session.scalar(
        select(ArchivedMessage.id).where(
            ArchivedMessage.mailing_list_id == list_id,
            ArchivedMessage.message_id_hash == reading.message_id_hash,
        )
    )
    return None if held is not None else filing._placed(session, list_id, raw, reading, now)


def archive_all(s: Session, mlist: MailingList) -> list[bool]:
    done = []
    for mid, subject, irt, refs, hours in POSTS:
        when = NOW + hours * H
        raw = mail(mid, subject, irt, refs, when=when)
        done.append(store.archive(s, mlist, raw, max(when, NOW)) is not None)
    return done


def picture(s: Session, mlist: MailingList) -> dict[str, Any]:
    """What threading made of a list's posts, by Message-ID (no row ids)."""
    s.expire_all()
    posts = s.scalars(select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id))
    by_id = {m.id: m for m in posts}
    mid = {pk: m.message_id for pk, m in by_id.items()}
    threads = {
        t.id: t
        for t in s.scalars(select(ArchiveThread).where(ArchiveThread.mailing_list_id == mlist.id))
    }
    members: dict[int | None, set[str]] = {}
    for m in by_id.values():
        members.setdefault(m.thread_id, set()).add(m.message_id)
    waiting = s.scalars(select(ArchiveWaiting).where(ArchiveWaiting.mailing_list_id == mlist.id))
    return {
        "posts": {
            m.message_id: (
                mid.get(m.parent_id) if m.parent_id is not None else None,
                sorted(members[m.thread_id]),
                m.subject,
                m.text,
                m.date,
            )
            for m in by_id.values()
        },
        "threads": sorted(
            (
                sorted(members.get(t.id, ())),
                t.posts,
                t.subject,
                t.subject_key,
                t.started_at,
                t.last_post_at,
            )
            for t in threads.values()
        ),
        "waiting": sorted((mid[w.archived_message_id], w.wanted_hash) for w in waiting),
    }


def test_filing_threads_as_the_general_path_does(
    txn_session: Session, mlist: MailingList, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = txn_session
    fast = archive_all(s, mlist)
    other = add_domain(s, f"{unique('filing')}.test", Roster())
    with monkeypatch.context() as m:
        m.setattr(filing, "file", general)
        slow = archive_all(s, other)
    assert fast == slow == [True] * 14 + [False, True]
    got, want = picture(s, mlist), picture(s, other)
    assert got == want
    # and what it made is what threading means
    posts = got["posts"]
    assert posts["<p4@example.com>"][0] == "<p3@example.com>"
    assert posts["<q2@example.com>"][0] == "<q1@example.com>"
    assert posts["<s2@example.com>"][0] == "<s1@example.com>"
    assert len(posts["<p1@example.com>"][1]) == 4 and len(posts["<q1@example.com>"][1]) == 3
