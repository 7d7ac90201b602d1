"""mtaplugin.relay.deliver: leases, crashes and stops.  Which pass holds a row, what a
crash between two transactions or after the MTA's 250 leaves, and how a lease follows the
clock.  The crash and lease-loss tests use the in-memory MTA's hooks to stop the worker at
a chosen transaction.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import outbox
from mtaplugin.clock import ManualClock
from mtaplugin.enums import OutboxStatus
from mtaplugin.errors import TryLater
from mtaplugin.model import OutboxMessage
from mtaplugin.testing.sink import Sink
from tests.unit.outbox.util import (
    FakeOutbox,
    MakeDelivery,
    Mta,
    delivery_for,
    enqueue,
    enqueue_posts,
    message_ids,
    row,
    set_lease,
)


def test_a_row_another_worker_holds_is_left_alone(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    held = enqueue(sessions, ["held@example.com"], now=clock())
    free = enqueue(sessions, ["free@example.com"], now=clock())
    set_lease(sessions, held, "other-host:123:abc", clock(), 3600)
    assert deliver().run().sent == 1
    assert mta.recipients() == {"free@example.com"}
    r = row(sessions, held)
    assert (r.status, r.attempts, r.claimed_by) == (OutboxStatus.queued, 0, "other-host:123:abc")
    assert row(sessions, free).claimed_by is None


def test_the_rows_of_a_dead_worker_are_picked_again_when_its_lease_ran_out(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    rid = enqueue(sessions, ["anne@example.com"], now=clock())
    set_lease(sessions, rid, "dead-host:99:abc", clock(), 60)
    assert deliver().run().claimed == 0
    clock.advance(seconds=61)
    assert deliver().run().sent == 1
    r = row(sessions, rid)
    assert (r.status, r.claimed_by, r.claimed_until) == (OutboxStatus.sent, None, None)
    assert mta.recipients() == {"anne@example.com"}


def test_a_stop_between_chunks_gives_the_row_back_where_it_is(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    people = [f"user{i}@example.com" for i in range(5)]
    rid = enqueue(sessions, people, now=clock())
    other = enqueue(sessions, ["other@example.com"], now=clock())
    delivery = deliver(max_recipients=2)
    result = delivery.run(should_stop=lambda: bool(mta.messages))
    assert (result.claimed, result.sent) == (2, 0)
    r = row(sessions, rid)
    assert (r.status, r.to_do(), r.claimed_by) == (OutboxStatus.queued, people[2:], None)
    assert (r.recipients, r.progress) == (people, 2)  # stored once: an offset moves
    assert r.next_attempt_at <= clock()  # due at once, for the next worker
    assert row(sessions, other).claimed_by is None
    assert delivery.run().sent == 2
    assert sorted(r for m in mta.messages for r in m.recipients) == sorted(
        [*people, "other@example.com"]
    )


def test_two_workers_at_once_never_send_the_same_row(
    sessions: sessionmaker[Session], sink: Sink, clock: ManualClock
) -> None:
    # Over SMTP: the in-memory MTA answers at once, and two threads that never wait for
    # an MTA keep SQLite's one write lock busy for longer than the tests' busy timeout.
    expected = enqueue_posts(sessions, rows=40, recipients=4, now=clock())
    delivery = delivery_for(sessions, sink, clock, max_recipients=2, batch_size=3)
    start = threading.Barrier(2)
    sent = [0, 0]
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            start.wait()
            while True:
                result = delivery.run()
                sent[n] += result.sent
                if not result.claimed:
                    with sessions() as s:
                        if not s.query(OutboxMessage).filter_by(status="queued").count():
                            return
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    pairs = message_ids(sink.messages)
    assert len(pairs) == len(set(pairs))  # nothing twice
    assert set(pairs) == expected  # nothing lost
    assert sum(sent) == 40
    assert min(sent) > 0  # both took part


# --- progress, leases and crashes (the in-memory MTA's hooks) ------------------------------
def test_progress_is_committed_after_every_chunk(box: FakeOutbox) -> None:
    people = [f"user{i}@example.com" for i in range(5)]
    rid = box.queue(people)
    box.killed_pass(before=3)
    r = row(box.sessions, rid)
    assert r.to_do() == ["user4@example.com"]
    assert (r.recipients, r.progress, r.retry) == (people, 4, [])  # not rewritten
    assert box.finished() == dict.fromkeys(people, 1)  # once each


def test_a_crash_after_the_250_sends_only_that_chunk_twice(box: FakeOutbox) -> None:
    """The window SMTP leaves open: the MTA took chunk 2, the worker died before it could
    commit that.  Chunk 2 goes again (a duplicate, not a loss); chunk 1 does not."""
    people = [f"user{i}@example.com" for i in range(5)]
    rid = box.queue(people)
    box.killed_pass(after=2)
    assert row(box.sessions, rid).to_do() == people[2:]
    assert box.finished() == {p: 2 if p in people[2:4] else 1 for p in people}


def test_a_pass_that_lost_its_lease_stops_sending_the_row(box: FakeOutbox) -> None:
    sessions, fake, deliver_fake, clock = box
    people = [f"user{i}@example.com" for i in range(6)]
    rid = enqueue(sessions, people, now=clock())
    # After the first chunk, our lease ran out and another worker took the row.
    fake.after_send = lambda n: set_lease(sessions, rid, "thief:1:abc", clock(), 3600)
    assert deliver_fake(max_recipients=2).run().sent == 0
    assert [m.recipients for m in fake.messages] == [("user0@example.com", "user1@example.com")]
    r = row(sessions, rid)
    # The commit after chunk 1 found the thief: nothing of ours was written.
    assert (r.claimed_by, r.recipients) == ("thief:1:abc", people)


def test_a_long_attempt_renews_its_lease_as_the_clock_moves(box: FakeOutbox) -> None:
    """Chunks that finish nobody (all deferred) commit nothing, but once a third of the
    lease has gone by the pass renews it, measured on the delivery's clock."""
    sessions, fake, deliver_fake, clock = box
    people = ["a@example.com", "b@example.com", "c@example.com"]
    fake.refuse.update(dict.fromkeys(people, "451 4.3.0 later"))
    rid = enqueue(sessions, people, now=clock())
    delivery = deliver_fake(max_recipients=1)
    lease = outbox.lease(delivery.out)
    start = clock()
    leases = []

    def slow_mta(n: int) -> None:
        leases.append(row(sessions, rid).claimed_until)
        clock.advance(lease / 2)

    fake.before_send = slow_mta
    assert delivery.run().deferred == 1
    assert leases == [start + lease, start + lease * 3 / 2, start + lease * 2]
    r = row(sessions, rid)
    assert (r.claimed_by, r.recipients) == (None, people)
    assert r.next_attempt_at == clock() + timedelta(minutes=1)


def test_rows_a_pass_could_not_give_back_are_given_back_by_the_next_pass(
    sessions: sessionmaker[Session],
    mta: Mta,
    deliver: MakeDelivery,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The database fails after the pass claimed its rows: neither the attempt nor the
    # release can be written.  The next pass, once the database is back, gives the rows
    # back and sends them at once, without waiting out the lease (10 x outbox.timeout).
    rid = enqueue(sessions, ["anne@example.com"], now=clock())
    delivery = deliver()
    store = delivery.store
    take, release = store.take, store.release

    def down(*_args: object) -> None:
        raise TryLater("the list database cannot be reached")

    monkeypatch.setattr(store, "take", down)
    monkeypatch.setattr(store, "release", down)
    with pytest.raises(TryLater):
        delivery.run()
    assert row(sessions, rid).claimed_by is not None
    with pytest.raises(TryLater):
        delivery.run()  # still down: kept for the pass after
    monkeypatch.setattr(store, "take", take)
    monkeypatch.setattr(store, "release", release)
    assert delivery.run().sent == 1
    assert mta.recipients() == {"anne@example.com"}
    r = row(sessions, rid)
    assert (r.status, r.claimed_by) == (OutboxStatus.sent, None)
