"""mtaplugin.outbox.store: rows queued in the caller's transaction, back-off, and leases
measured on the delivery's clock."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import outbox
from mtaplugin.archivers import queue as archivers_queue
from mtaplugin.clock import ManualClock
from mtaplugin.config import OutboxSettings
from mtaplugin.enums import OutboxStatus
from mtaplugin.model import OutboxMessage
from mtaplugin.model.base import utcnow
from mtaplugin.news import queue as news_queue
from mtaplugin.outbox.store import Store, policy
from mtaplugin.vocabulary import retry
from tests.unit.outbox.util import RAW, enqueue, row


def test_backoff_doubles_up_to_an_hour() -> None:
    assert outbox.backoff(0) == timedelta(minutes=1)
    assert outbox.backoff(1) == timedelta(minutes=1)
    assert outbox.backoff(2) == timedelta(minutes=2)
    assert outbox.backoff(3) == timedelta(minutes=4)
    assert outbox.backoff(7) == timedelta(minutes=60)
    assert outbox.backoff(30) == timedelta(hours=1)


def test_one_retry_policy_for_the_outbox_news_and_archivers() -> None:
    """The outbox's [outbox] defaults are the policy the news and archivers' queues use;
    its settings change the figures, not the rule."""
    assert policy(OutboxSettings()) == retry.DEFAULT
    for n in (0, 1, 2, 5, 9, 40):
        assert outbox.backoff(n) == news_queue.backoff(n) == archivers_queue.backoff(n)
    short = policy(OutboxSettings(retry_period=600))
    start = utcnow()
    assert not short.expired(start, start + timedelta(seconds=599))
    assert short.expired(start, start + timedelta(seconds=600))


def test_backoff_follows_the_settings() -> None:
    out = OutboxSettings(backoff_first=10, backoff_max=35)
    assert [outbox.backoff(n, out).total_seconds() for n in (1, 2, 3, 4, 500)] == [
        10,
        20,
        35,
        35,
        35,
    ]


def test_the_lease_is_ten_smtp_timeouts() -> None:
    assert outbox.lease(OutboxSettings(timeout=30)) == timedelta(minutes=5)


def test_enqueue_keeps_a_queued_row(sessions: sessionmaker[Session]) -> None:
    before = utcnow()
    rid = enqueue(sessions, ["anne@example.com"], kind="notice")
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.attempts == 0
    assert r.recipients == ["anne@example.com"]
    assert r.raw == RAW
    assert r.kind == "notice"
    assert before <= r.next_attempt_at <= utcnow()


def test_enqueue_on_a_clock_is_due_at_its_time(
    sessions: sessionmaker[Session], clock: ManualClock
) -> None:
    at = clock.advance(hours=2)
    r = row(sessions, enqueue(sessions, ["anne@example.com"], now=at))
    assert (r.created_at, r.next_attempt_at) == (at, at)


def test_enqueue_is_part_of_the_callers_transaction(sessions: sessionmaker[Session]) -> None:
    with sessions() as s, s.begin():
        outbox.enqueue(s, "x@lists.test", ["anne@example.com"], RAW)
        s.rollback()
    with sessions() as s:
        assert s.query(OutboxMessage).count() == 0


def test_a_row_is_due_when_the_clock_says_so(
    sessions: sessionmaker[Session], clock: ManualClock
) -> None:
    store = Store(sessions, OutboxSettings(), clock)
    rid = enqueue(sessions, ["anne@example.com"], now=clock() + timedelta(minutes=10))
    assert not store.anything_due()
    assert store.claim("pass:1:a", 10) == []
    clock.advance(minutes=10)
    assert store.anything_due()
    assert store.claim("pass:1:a", 10) == [rid]


def test_a_lease_runs_out_on_the_clock(sessions: sessionmaker[Session], clock: ManualClock) -> None:
    out = OutboxSettings(timeout=6)  # a one-minute lease
    store = Store(sessions, out, clock)
    rid = enqueue(sessions, ["anne@example.com"], now=clock())
    assert store.claim("dead:1:a", 10) == [rid]
    r = row(sessions, rid)
    assert (r.claimed_by, r.claimed_until) == ("dead:1:a", clock() + timedelta(minutes=1))
    assert not store.anything_due()
    clock.advance(seconds=59)
    assert store.claim("next:2:b", 10) == []
    clock.advance(seconds=2)
    assert store.claim("next:2:b", 10) == [rid]
    assert row(sessions, rid).claimed_by == "next:2:b"


def test_a_commit_of_a_pass_that_lost_its_lease_writes_nothing(
    sessions: sessionmaker[Session], clock: ManualClock
) -> None:
    store = Store(sessions, OutboxSettings(), clock)
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com"], now=clock())
    assert store.claim("slow:1:a", 10) == [rid]
    taken = store.take("slow:1:a", rid)
    assert taken is not None and taken.attempts == 1
    clock.advance(outbox.lease(store.out) + timedelta(seconds=1))
    assert store.claim("next:2:b", 10) == [rid]
    assert not store.save("slow:1:a", rid, progress=1, retry=[], release=True)
    assert store.take("slow:1:a", rid) is None
    r = row(sessions, rid)
    assert (r.claimed_by, r.recipients) == ("next:2:b", ["anne@example.com", "bob@example.com"])


def test_defer_waits_the_backoff_on_the_clock_and_fails_past_the_retry_period(
    sessions: sessionmaker[Session], clock: ManualClock
) -> None:
    store = Store(sessions, OutboxSettings(retry_period=600), clock)
    rid = enqueue(sessions, ["anne@example.com"], now=clock())
    store.claim("pass:1:a", 10)
    assert store.defer("pass:1:a", [rid], "ConnectionRefusedError: no") == 1
    r = row(sessions, rid)
    assert (r.status, r.attempts, r.claimed_by) == (OutboxStatus.queued, 1, None)
    assert r.next_attempt_at == clock() + timedelta(minutes=1)
    assert r.last_error == "ConnectionRefusedError: no"
    clock.advance(minutes=11)
    store.claim("pass:2:b", 10)
    assert store.defer("pass:2:b", [rid], "ConnectionRefusedError: no") == 1
    assert row(sessions, rid).status is OutboxStatus.failed
