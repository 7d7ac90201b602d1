"""mtaplugin.outbox: the progress offset.  A row's recipients are written once (when it is
queued, and when an attempt settles); after each chunk the worker records only how far it
got and the few recipients before that point still to do.  A kill between chunks resumes
at the offset, loses no deferred recipient, and sends at most the chunk in flight twice.
Runs on SQLite and on PostgreSQL (the module's database fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import ManualClock
from mtaplugin.enums import OutboxStatus
from mtaplugin.testing.transport import FakeTransport
from tests.unit.outbox.util import (
    FakeOutbox,
    MakeDelivery,
    copies_to,
    enqueue,
    row,
)


@pytest.fixture
def outbox_updates(sessions: sessionmaker[Session]) -> Iterator[list[str]]:
    """The UPDATE statements on the outbox sent while the test runs."""
    seen: list[str] = []
    engine = sessions.kw["bind"]

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("UPDATE OUTBOX"):
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", before)
    yield seen
    event.remove(engine, "before_cursor_execute", before)


def people(n: int) -> list[str]:
    return [f"user{i:02d}@example.com" for i in range(n)]


def test_the_recipients_are_not_rewritten_at_every_chunk(
    sessions: sessionmaker[Session],
    fake: FakeTransport,
    deliver_fake: MakeDelivery,
    clock: ManualClock,
    outbox_updates: list[str],
) -> None:
    everyone = people(20)
    rid = enqueue(sessions, everyone, now=clock())
    assert deliver_fake(max_recipients=2).run().sent == 1
    assert sorted(r for m in fake.messages for r in m.recipients) == everyone
    progress = [s for s in outbox_updates if "progress=" in s]
    writes = [s for s in outbox_updates if "recipients=" in s]
    assert len(progress) >= 9  # one commit after each chunk but the last
    assert len(writes) == 1  # the outcome: nobody left
    r = row(sessions, rid)
    assert (r.status, r.recipients, r.progress, r.retry) == (OutboxStatus.sent, [], 0, [])


def test_a_kill_resumes_at_the_offset_and_sends_nobody_twice_before_it(box: FakeOutbox) -> None:
    everyone = people(9)
    rid = box.queue(everyone)
    box.killed_pass(before=4)  # killed before its fourth transaction
    r = row(box.sessions, rid)
    assert (r.recipients, r.progress, r.retry) == (everyone, 6, [])
    assert box.finished() == dict.fromkeys(everyone, 1)


def test_a_kill_after_the_250_sends_only_the_chunk_in_flight_again(box: FakeOutbox) -> None:
    everyone = people(9)
    rid = box.queue(everyone)
    box.killed_pass(after=3)  # the MTA took chunk 3; its commit was never made
    assert row(box.sessions, rid).progress == 4
    assert box.finished() == {p: 2 if p in everyone[4:6] else 1 for p in everyone}


def test_a_recipient_deferred_before_a_kill_is_kept_and_sent_later(box: FakeOutbox) -> None:
    everyone = people(7)
    rid = box.queue(everyone)
    box.fake.refuse[everyone[1]] = "451 4.3.0 try later"
    box.killed_pass(before=3)
    r = row(box.sessions, rid)
    assert (r.progress, r.retry) == (4, [everyone[1]])
    assert r.to_do() == [everyone[1], *everyone[4:]]
    box.fake.refuse.clear()
    assert box.finished() == dict.fromkeys(everyone, 1)


def test_an_attempt_with_deferrals_keeps_them_for_the_next_one(box: FakeOutbox) -> None:
    sessions, fake, deliver_fake, clock = box
    everyone = people(6)
    rid = enqueue(sessions, everyone, now=clock())
    fake.refuse.update({everyone[0]: "450 4.2.0 busy", everyone[5]: "450 4.2.0 busy"})
    assert deliver_fake(max_recipients=4).run().deferred == 1
    r = row(sessions, rid)
    assert (r.status, r.recipients, r.progress, r.retry) == (
        OutboxStatus.queued,
        [everyone[0], everyone[5]],
        0,
        [],
    )
    fake.refuse.clear()
    clock.advance(r.next_attempt_at - clock())
    assert deliver_fake(max_recipients=4).run().sent == 1
    got = copies_to(fake)
    assert got == dict.fromkeys(everyone, 1)


def test_recipients_the_mta_did_not_try_go_first_in_the_next_chunk(box: FakeOutbox) -> None:
    """A 421 at RCPT: the MTA hangs up (that recipient is deferred); the recipients it took
    but never got the data for are tried again at once, before the offset moves on."""
    sessions, fake, deliver_fake, clock = box
    everyone = people(6)
    rid = enqueue(sessions, everyone, now=clock())
    fake.refuse[everyone[2]] = "421 4.3.2 closing"
    assert deliver_fake(max_recipients=3).run().deferred == 1
    assert [m.recipients for m in fake.messages] == [tuple(everyone[:2]), tuple(everyone[3:])]
    r = row(sessions, rid)
    assert (r.recipients, r.progress, r.retry) == ([everyone[2]], 0, [])
