"""mtaplugin.relay.deliver: passes over the outbox, on a clock the tests move.

Each behaviour runs twice: against the in-memory MTA (``FakeTransport``) and over SMTP to
the aiosmtpd sink.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta

from mtaplugin import wiring, worker
from mtaplugin.config import Settings
from mtaplugin.db import engine_of
from mtaplugin.enums import OutboxStatus
from mtaplugin.vocabulary.job import Job, JobContext
from tests.unit.outbox.util import (
    RAW,
    FakeOutbox,
    Outbox,
    connects,
    enqueue,
    enqueue_posts,
    message_ids,
    same_message,
)

LATER = "451 4.2.0 try later"
GONE = "550 5.1.1 no such user"


def test_delivery_marks_the_row_sent(out: Outbox) -> None:
    rid = out.queue("anne@example.com", "bob@example.com")
    assert out.deliver().run().sent == 1
    (got,) = out.mta.messages
    assert got.mail_from == "team-bounces@lists.test"
    assert got.recipients == ("anne@example.com", "bob@example.com")
    assert same_message(got.data, RAW)
    r = out.row(rid)
    assert r.status is OutboxStatus.sent
    assert r.attempts == 1
    # Sent rows are not sent again.
    assert out.deliver().run().sent == 0
    assert len(out.mta.messages) == 1


def test_a_4xx_recipient_is_retried_later_with_backoff_on_the_clock(out: Outbox) -> None:
    mta, deliver, clock = out.mta, out.deliver, out.clock
    rid = out.queue("anne@example.com", "bob@example.com", refuse={"bob@example.com": LATER})
    assert deliver().run().sent == 0
    assert mta.recipients() == {"anne@example.com"}
    r = out.row(rid)
    assert (r.status, r.attempts) == (OutboxStatus.queued, 1)
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
    r = out.row(rid)
    assert r.attempts == 2
    assert r.next_attempt_at == clock() + timedelta(seconds=120)

    # Due, and the server takes it now.
    del mta.refuse["bob@example.com"]
    clock.advance(seconds=120)
    assert deliver().run().sent == 1
    assert [m.recipients for m in mta.to("bob@example.com")] == [("bob@example.com",)]
    r = out.row(rid)
    assert (r.status, r.attempts) == (OutboxStatus.sent, 3)


def test_every_recipient_deferred(out: Outbox) -> None:
    refuse = {"anne@example.com": "450 4.2.1 mailbox busy", "bob@example.com": "451 4.3.0 later"}
    rid = out.queue("anne@example.com", "bob@example.com", refuse=refuse)
    assert out.deliver().run().deferred == 1
    assert out.mta.messages == []
    r = out.row(rid)
    assert r.status is OutboxStatus.queued
    assert r.recipients == ["anne@example.com", "bob@example.com"]
    assert r.next_attempt_at > out.clock()


def test_permanent_refusal_of_some_recipients_is_not_retried(out: Outbox) -> None:
    rid = out.queue("anne@example.com", "gone@example.com", refuse={"gone@example.com": GONE})
    assert out.deliver().run().sent == 1
    assert out.mta.recipients() == {"anne@example.com"}
    assert out.row(rid).status is OutboxStatus.sent


def test_permanent_refusal_of_every_recipient_marks_the_row_failed(out: Outbox) -> None:
    refuse = {"gone@example.com": GONE, "left@example.com": "554 5.7.1 not here"}
    rid = out.queue("gone@example.com", "left@example.com", refuse=refuse)
    result = out.deliver().run()
    assert (result.sent, result.failed) == (0, 1)
    assert out.mta.messages == []
    r = out.row(rid)
    assert r.status is OutboxStatus.failed
    assert "550" in r.last_error
    # A failed row is not tried again.
    out.clock.advance(hours=1)
    out.deliver().run()
    assert out.row(rid).attempts == 1


def test_mixed_4xx_and_5xx_retries_only_the_4xx(out: Outbox) -> None:
    refuse = {"gone@example.com": GONE, "busy@example.com": "452 4.2.2 full"}
    rid = out.queue("gone@example.com", "busy@example.com", refuse=refuse)
    assert out.deliver().run().sent == 0
    r = out.row(rid)
    assert r.status is OutboxStatus.queued
    assert r.recipients == ["busy@example.com"]


def test_recipients_are_sent_in_batches(out: Outbox) -> None:
    rid = out.queue(*(f"user{i}@example.com" for i in range(5)))
    assert out.deliver(max_recipients=2).run().sent == 1
    assert [m.recipients for m in out.mta.messages] == [
        ("user0@example.com", "user1@example.com"),
        ("user2@example.com", "user3@example.com"),
        ("user4@example.com",),
    ]
    assert out.row(rid).status is OutboxStatus.sent


def test_gives_up_after_the_retry_period(out: Outbox) -> None:
    rid = out.queue("bob@example.com", refuse={"bob@example.com": LATER})
    out.clock.advance(seconds=out.deliver().out.retry_period, hours=1)
    assert out.deliver().run().sent == 0
    r = out.row(rid)
    assert r.status is OutboxStatus.failed
    assert r.last_error


def test_the_retry_period_is_a_setting(out: Outbox) -> None:
    rid = out.queue("bob@example.com", refuse={"bob@example.com": LATER})
    out.clock.advance(seconds=120)
    out.deliver(retry_period=300).run()
    assert out.row(rid).status is OutboxStatus.queued
    out.clock.advance(seconds=60)
    out.deliver(retry_period=60).run()
    assert out.row(rid).status is OutboxStatus.failed


def test_only_due_rows_in_order_and_up_to_the_limit(out: Outbox) -> None:
    sessions, mta, deliver, clock = out
    later = enqueue(sessions, ["later@example.com"], now=clock() + timedelta(hours=1))
    first = enqueue(sessions, ["first@example.com"], now=clock())
    enqueue(sessions, ["second@example.com"], now=clock() - timedelta(seconds=1))
    assert deliver().run(limit=1).sent == 1
    assert mta.recipients() == {"second@example.com"}
    assert deliver().run().sent == 1
    assert mta.recipients() == {"second@example.com", "first@example.com"}
    assert out.row(first).status is OutboxStatus.sent
    assert out.row(later).status is OutboxStatus.queued
    assert out.row(later).attempts == 0


def test_a_pass_takes_at_most_batch_size_rows(out: Outbox) -> None:
    for name in ("a", "b", "c"):
        out.queue(f"{name}@example.com")
    delivery = out.deliver(batch_size=2)
    result = delivery.run()
    assert (result.claimed, result.sent) == (2, 2)
    assert delivery.run().sent == 1
    assert delivery.run().claimed == 0
    assert out.mta.recipients() == {"a@example.com", "b@example.com", "c@example.com"}


def test_one_connection_for_the_whole_pass_with_a_reset_between_rows(out: Outbox) -> None:
    expected = enqueue_posts(out.sessions, rows=4, recipients=3, now=out.clock())
    assert out.deliver(max_recipients=2).run().sent == 4
    assert sorted(message_ids(out.mta.messages)) == sorted(expected)
    assert len(out.mta.messages) == 8  # two transactions per row
    assert (connects(out.mta), out.mta.resets) == (1, 3)


def test_a_421_loses_none_of_the_recipients_not_yet_named(out: Outbox) -> None:
    # smtplib gives up on the transaction at a 421 and closes: anne's RCPT had been
    # accepted, but no data went, and carol was never named.
    refuse = {"bob@example.com": "421 4.3.2 shutting down"}
    rid = out.queue("anne@example.com", "bob@example.com", "carol@example.com", refuse=refuse)
    assert out.deliver().run().sent == 0
    assert sorted(r for m in out.mta.messages for r in m.recipients) == [
        "anne@example.com",
        "carol@example.com",
    ]
    r = out.row(rid)
    assert (r.status, r.recipients) == (OutboxStatus.queued, ["bob@example.com"])
    assert "421" in r.last_error
    assert connects(out.mta) == 2


def test_the_worker_runs_the_delivery_it_is_given(box: FakeOutbox) -> None:
    sessions, fake, deliver_fake, clock = box
    enqueue(sessions, ["anne@example.com"], now=clock())
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        world = wiring.build(Settings(), db=engine_of(sessions), clock=clock)
        worker.run(world, once=True, delivery=deliver_fake())
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert fake.recipients() == {"anne@example.com"}


def test_a_long_job_does_not_hold_up_the_outbox(box: FakeOutbox) -> None:
    sessions, fake, deliver_fake, clock = box
    # The job queues a copy and then waits for it to leave: only a worker that delivers
    # while a job runs gets it out (a worker that runs jobs in its delivery loop waits
    # out the job's 10 s and the copy is still in the outbox).
    seen: list[bool] = []

    def slow(ctx: JobContext) -> int:
        enqueue(sessions, ["bob@example.com"], now=clock())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "bob@example.com" not in fake.recipients():
            time.sleep(0.05)
        seen.append("bob@example.com" in fake.recipients())
        os.kill(os.getpid(), signal.SIGTERM)  # the worker's own stop
        return 1

    job = Job("slow", timedelta(hours=1), slow, "waits for the outbox")
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        world = wiring.build(Settings(), db=engine_of(sessions), clock=clock)
        worker.run(world, delivery=deliver_fake(), jobs=[job])
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert seen == [True]
