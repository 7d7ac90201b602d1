"""mtaplugin.outbox.deliver: passes over the outbox, on a clock the tests move.

Each behaviour runs twice: against the in-memory MTA (``FakeTransport``) and over SMTP to
the aiosmtpd sink.  The crash and lease tests use the in-memory MTA's hooks to stop the
worker at a chosen transaction.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import outbox
from mtaplugin.clock import ManualClock
from mtaplugin.model import OutboxMessage
from mtaplugin.model.enums import OutboxStatus
from mtaplugin.testing.sink import Sink
from mtaplugin.testing.transport import FakeTransport
from tests.unit.outbox.util import (
    RAW,
    Mta,
    connects,
    delivery_for,
    enqueue,
    enqueue_posts,
    message_ids,
    row,
    same_message,
    set_lease,
)

MakeDelivery = Callable[..., outbox.Delivery]


@pytest.fixture(params=["fake", "smtp"])
def mta(request: pytest.FixtureRequest, sink: Sink) -> Mta:
    return FakeTransport() if request.param == "fake" else sink


@pytest.fixture
def fake() -> FakeTransport:
    return FakeTransport()


@pytest.fixture
def deliver(sessions: sessionmaker[Session], mta: Mta, clock: ManualClock) -> MakeDelivery:
    """A delivery to ``mta`` on ``clock``, with the ``[outbound]`` values given."""
    return lambda **values: delivery_for(sessions, mta, clock, **values)


@pytest.fixture
def deliver_fake(
    sessions: sessionmaker[Session], fake: FakeTransport, clock: ManualClock
) -> MakeDelivery:
    return lambda **values: delivery_for(sessions, fake, clock, **values)


def test_delivery_marks_the_row_sent(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com"], now=clock())
    assert deliver().run().sent == 1
    (got,) = mta.messages
    assert got.mail_from == "team-bounces@lists.test"
    assert got.recipients == ("anne@example.com", "bob@example.com")
    assert same_message(got.data, RAW)
    r = row(sessions, rid)
    assert r.status is OutboxStatus.sent
    assert r.attempts == 1
    # Sent rows are not sent again.
    assert deliver().run().sent == 0
    assert len(mta.messages) == 1


def test_a_4xx_recipient_is_retried_later_with_backoff_on_the_clock(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    mta.refuse["bob@example.com"] = "451 4.2.0 try later"
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com"], now=clock())
    assert deliver().run().sent == 0
    assert mta.recipients() == {"anne@example.com"}
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.attempts == 1
    # Only the deferred recipient is left: anne does not get a second copy.
    assert r.recipients == ["bob@example.com"]
    assert r.last_error
    assert r.next_attempt_at == clock() + timedelta(seconds=60)

    # Not due yet: nothing happens.
    clock.advance(seconds=59)
    assert deliver().run().claimed == 0
    assert len(mta.messages) == 1

    # Due, still deferred: the next wait is twice as long.
    clock.advance(seconds=1)
    assert deliver().run().sent == 0
    r = row(sessions, rid)
    assert r.attempts == 2
    assert r.next_attempt_at == clock() + timedelta(seconds=120)

    # Due, and the server takes it now.
    del mta.refuse["bob@example.com"]
    clock.advance(seconds=120)
    assert deliver().run().sent == 1
    assert [m.recipients for m in mta.to("bob@example.com")] == [("bob@example.com",)]
    r = row(sessions, rid)
    assert (r.status, r.attempts) == (OutboxStatus.sent, 3)


def test_every_recipient_deferred(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    mta.refuse["anne@example.com"] = "450 4.2.1 mailbox busy"
    mta.refuse["bob@example.com"] = "451 4.3.0 later"
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com"], now=clock())
    assert deliver().run().deferred == 1
    assert mta.messages == []
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.recipients == ["anne@example.com", "bob@example.com"]
    assert r.next_attempt_at > clock()


def test_permanent_refusal_of_some_recipients_is_not_retried(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    mta.refuse["gone@example.com"] = "550 5.1.1 no such user"
    rid = enqueue(sessions, ["anne@example.com", "gone@example.com"], now=clock())
    assert deliver().run().sent == 1
    assert mta.recipients() == {"anne@example.com"}
    assert row(sessions, rid).status is OutboxStatus.sent


def test_permanent_refusal_of_every_recipient_marks_the_row_failed(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    mta.refuse["gone@example.com"] = "550 5.1.1 no such user"
    mta.refuse["left@example.com"] = "554 5.7.1 not here"
    rid = enqueue(sessions, ["gone@example.com", "left@example.com"], now=clock())
    result = deliver().run()
    assert (result.sent, result.failed) == (0, 1)
    assert mta.messages == []
    r = row(sessions, rid)
    assert r.status is OutboxStatus.failed
    assert "550" in r.last_error
    # A failed row is not tried again.
    clock.advance(hours=1)
    deliver().run()
    assert row(sessions, rid).attempts == 1


def test_mixed_4xx_and_5xx_retries_only_the_4xx(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    mta.refuse["gone@example.com"] = "550 5.1.1 no such user"
    mta.refuse["busy@example.com"] = "452 4.2.2 full"
    rid = enqueue(sessions, ["gone@example.com", "busy@example.com"], now=clock())
    assert deliver().run().sent == 0
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.recipients == ["busy@example.com"]


def test_recipients_are_sent_in_batches(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    people = [f"user{i}@example.com" for i in range(5)]
    rid = enqueue(sessions, people, now=clock())
    assert deliver(max_recipients=2).run().sent == 1
    assert [m.recipients for m in mta.messages] == [
        ("user0@example.com", "user1@example.com"),
        ("user2@example.com", "user3@example.com"),
        ("user4@example.com",),
    ]
    assert row(sessions, rid).status is OutboxStatus.sent


def test_gives_up_after_the_retry_period(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    mta.refuse["bob@example.com"] = "451 4.2.0 try later"
    rid = enqueue(sessions, ["bob@example.com"], now=clock())
    clock.advance(seconds=deliver().out.retry_period, hours=1)
    assert deliver().run().sent == 0
    r = row(sessions, rid)
    assert r.status is OutboxStatus.failed
    assert r.last_error


def test_the_retry_period_is_a_setting(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    mta.refuse["bob@example.com"] = "451 4.2.0 try later"
    rid = enqueue(sessions, ["bob@example.com"], now=clock())
    clock.advance(seconds=120)
    deliver(retry_period=300).run()
    assert row(sessions, rid).status is OutboxStatus.queued
    clock.advance(seconds=60)
    deliver(retry_period=60).run()
    assert row(sessions, rid).status is OutboxStatus.failed


def test_only_due_rows_in_order_and_up_to_the_limit(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    later = enqueue(sessions, ["later@example.com"], now=clock() + timedelta(hours=1))
    first = enqueue(sessions, ["first@example.com"], now=clock())
    enqueue(sessions, ["second@example.com"], now=clock() - timedelta(seconds=1))
    assert deliver().run(limit=1).sent == 1
    assert mta.recipients() == {"second@example.com"}
    assert deliver().run().sent == 1
    assert mta.recipients() == {"second@example.com", "first@example.com"}
    assert row(sessions, first).status is OutboxStatus.sent
    assert row(sessions, later).status is OutboxStatus.queued
    assert row(sessions, later).attempts == 0


def test_a_pass_takes_at_most_batch_size_rows(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    for name in ("a", "b", "c"):
        enqueue(sessions, [f"{name}@example.com"], now=clock())
    delivery = deliver(batch_size=2)
    result = delivery.run()
    assert (result.claimed, result.sent) == (2, 2)
    assert delivery.run().sent == 1
    assert delivery.run().claimed == 0
    assert mta.recipients() == {"a@example.com", "b@example.com", "c@example.com"}


def test_one_connection_for_the_whole_pass_with_a_reset_between_rows(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    expected = enqueue_posts(sessions, rows=4, recipients=3, now=clock())
    assert deliver(max_recipients=2).run().sent == 4
    assert sorted(message_ids(mta.messages)) == sorted(expected)
    assert len(mta.messages) == 8  # two transactions per row
    assert (connects(mta), mta.resets) == (1, 3)


def test_a_421_loses_none_of_the_recipients_not_yet_named(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    # smtplib gives up on the transaction at a 421 and closes: anne's RCPT had been
    # accepted, but no data went, and carol was never named.
    mta.refuse["bob@example.com"] = "421 4.3.2 shutting down"
    rid = enqueue(
        sessions, ["anne@example.com", "bob@example.com", "carol@example.com"], now=clock()
    )
    assert deliver().run().sent == 0
    assert sorted(r for m in mta.messages for r in m.recipients) == [
        "anne@example.com",
        "carol@example.com",
    ]
    r = row(sessions, rid)
    assert (r.status, r.recipients) == (OutboxStatus.queued, ["bob@example.com"])
    assert "421" in r.last_error
    assert connects(mta) == 2


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
    assert (r.status, r.recipients, r.claimed_by) == (OutboxStatus.queued, people[2:], None)
    assert r.next_attempt_at <= clock()  # due at once, for the next worker
    assert row(sessions, other).claimed_by is None
    assert delivery.run().sent == 2
    assert sorted(r for m in mta.messages for r in m.recipients) == sorted(
        [*people, "other@example.com"]
    )


def test_two_workers_at_once_never_send_the_same_row(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> None:
    expected = enqueue_posts(sessions, rows=40, recipients=4, now=clock())
    delivery = deliver(max_recipients=2, batch_size=3)
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
    pairs = message_ids(mta.messages)
    assert len(pairs) == len(set(pairs))  # nothing twice
    assert set(pairs) == expected  # nothing lost
    assert sum(sent) == 40
    assert min(sent) > 0  # both took part


# --- progress, leases and crashes (the in-memory MTA's hooks) ------------------------------
class Crash(BaseException):
    """Stands for a kill: nothing of mtaplugin's error handling catches it."""


def crash_at(number: int) -> Callable[[int], None]:
    def crash(n: int) -> None:
        if n == number:
            raise Crash

    return crash


def test_progress_is_committed_after_every_chunk(
    sessions: sessionmaker[Session],
    fake: FakeTransport,
    deliver_fake: MakeDelivery,
    clock: ManualClock,
) -> None:
    people = [f"user{i}@example.com" for i in range(5)]
    rid = enqueue(sessions, people, now=clock())
    fake.before_send = crash_at(3)
    with pytest.raises(Crash):
        deliver_fake(max_recipients=2).run()
    assert row(sessions, rid).recipients == ["user4@example.com"]
    fake.before_send = None
    assert deliver_fake(max_recipients=2).run().sent == 1
    assert sorted(r for m in fake.messages for r in m.recipients) == people  # once each


def test_a_crash_after_the_250_sends_only_that_chunk_twice(
    sessions: sessionmaker[Session],
    fake: FakeTransport,
    deliver_fake: MakeDelivery,
    clock: ManualClock,
) -> None:
    """The window SMTP leaves open: the MTA took chunk 2, the worker died before it could
    commit that.  Chunk 2 goes again (a duplicate, not a loss); chunk 1 does not."""
    people = [f"user{i}@example.com" for i in range(5)]
    rid = enqueue(sessions, people, now=clock())
    fake.after_send = crash_at(2)
    with pytest.raises(Crash):
        deliver_fake(max_recipients=2).run()
    assert row(sessions, rid).recipients == people[2:]
    fake.after_send = None
    assert deliver_fake(max_recipients=2).run().sent == 1
    got = Counter(r for m in fake.messages for r in m.recipients)
    assert got == {p: 2 if p in people[2:4] else 1 for p in people}


def test_a_pass_that_lost_its_lease_stops_sending_the_row(
    sessions: sessionmaker[Session],
    fake: FakeTransport,
    deliver_fake: MakeDelivery,
    clock: ManualClock,
) -> None:
    people = [f"user{i}@example.com" for i in range(6)]
    rid = enqueue(sessions, people, now=clock())
    # After the first chunk, our lease ran out and another worker took the row.
    fake.after_send = lambda n: set_lease(sessions, rid, "thief:1:abc", clock(), 3600)
    assert deliver_fake(max_recipients=2).run().sent == 0
    assert [m.recipients for m in fake.messages] == [("user0@example.com", "user1@example.com")]
    r = row(sessions, rid)
    # The commit after chunk 1 found the thief: nothing of ours was written.
    assert (r.claimed_by, r.recipients) == ("thief:1:abc", people)


def test_a_long_attempt_renews_its_lease_as_the_clock_moves(
    sessions: sessionmaker[Session],
    fake: FakeTransport,
    deliver_fake: MakeDelivery,
    clock: ManualClock,
) -> None:
    """Chunks that finish nobody (all deferred) commit nothing, but once a third of the
    lease has gone by the pass renews it, measured on the delivery's clock."""
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
