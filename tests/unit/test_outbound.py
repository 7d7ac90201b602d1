"""mtaplugin.outbound: the outbox, submitted to a real SMTP server (the aiosmtpd sink)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import delete, update
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import outbound
from mtaplugin.config import OutboundSettings, Settings
from mtaplugin.model import OutboxMessage
from mtaplugin.model.base import utcnow
from mtaplugin.model.enums import OutboxStatus
from mtaplugin.testing import free_port
from mtaplugin.testing.sink import Sink
from tests.helpers import make_post


@pytest.fixture
def sessions(module_sessions: sessionmaker[Session]) -> sessionmaker[Session]:
    """One database per backend for the module, with an empty outbox for every test."""
    with module_sessions.begin() as s:
        s.execute(delete(OutboxMessage))
    return module_sessions


@pytest.fixture(scope="module")
def sink() -> Iterator[Sink]:
    s = Sink(free_port()).start()
    yield s
    s.stop()


@pytest.fixture
def mta(sink: Sink) -> Sink:
    sink.clear()
    sink.refuse.clear()
    return sink


def settings_for(port: int, max_recipients: int = 500) -> Settings:
    return Settings(
        outbound=OutboundSettings(
            host="127.0.0.1", port=port, timeout=5.0, max_recipients=max_recipients
        )
    )


@pytest.fixture
def settings(mta: Sink) -> Settings:
    return settings_for(mta.port)


RAW = make_post("team-owner@lists.test", "anne@example.com", subject="Your post is held")


def enqueue(sessions: sessionmaker[Session], recipients: list[str], **kw) -> int:
    with sessions.begin() as s:
        return outbound.enqueue(s, "team-bounces@lists.test", recipients, RAW, **kw).id


def row(sessions: sessionmaker[Session], row_id: int) -> OutboxMessage:
    with sessions() as s:
        found = s.get(OutboxMessage, row_id)
        assert found is not None
        return found


def make_due(sessions: sessionmaker[Session], row_id: int, **values) -> None:
    with sessions.begin() as s:
        s.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == row_id)
            .values(next_attempt_at=utcnow() - timedelta(seconds=1), **values)
        )


def same_message(received: bytes, sent: bytes) -> bool:
    """Equal but for line endings and the transport's trailing line break."""

    def norm(data: bytes) -> bytes:
        return data.replace(b"\r\n", b"\n").rstrip(b"\n")

    return norm(received) == norm(sent)


def test_backoff_doubles_up_to_an_hour():
    assert outbound.backoff(0) == timedelta(minutes=1)
    assert outbound.backoff(1) == timedelta(minutes=1)
    assert outbound.backoff(2) == timedelta(minutes=2)
    assert outbound.backoff(3) == timedelta(minutes=4)
    assert outbound.backoff(7) == timedelta(minutes=60)
    assert outbound.backoff(30) == timedelta(hours=1)


def test_enqueue_keeps_a_queued_row(sessions: sessionmaker[Session]):
    before = utcnow()
    rid = enqueue(sessions, ["anne@example.com"], kind="notice")
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.attempts == 0
    assert r.recipients == ["anne@example.com"]
    assert r.raw == RAW
    assert r.kind == "notice"
    assert before <= r.next_attempt_at <= utcnow()


def test_enqueue_is_part_of_the_callers_transaction(sessions: sessionmaker[Session]):
    with sessions() as s, s.begin():
        outbound.enqueue(s, "x@lists.test", ["anne@example.com"], RAW)
        s.rollback()
    with sessions() as s:
        assert s.query(OutboxMessage).count() == 0


def test_delivery_marks_the_row_sent(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com"])
    assert outbound.deliver_due(sessions, settings) == 1
    (got,) = mta.messages
    assert got.mail_from == "team-bounces@lists.test"
    assert got.recipients == ("anne@example.com", "bob@example.com")
    assert same_message(got.data, RAW)
    r = row(sessions, rid)
    assert r.status is OutboxStatus.sent
    assert r.attempts == 1
    # Sent rows are not sent again.
    assert outbound.deliver_due(sessions, settings) == 0
    assert len(mta.messages) == 1


def test_a_4xx_recipient_is_retried_later_with_backoff(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    mta.refuse["bob@example.com"] = "451 4.2.0 try later"
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com"])
    before = utcnow()
    assert outbound.deliver_due(sessions, settings) == 0
    assert mta.recipients() == {"anne@example.com"}
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.attempts == 1
    # Only the deferred recipient is left: anne does not get a second copy.
    assert r.recipients == ["bob@example.com"]
    assert r.last_error
    assert before + timedelta(seconds=59) <= r.next_attempt_at <= utcnow() + timedelta(seconds=61)

    # Not due yet: nothing happens.
    assert outbound.deliver_due(sessions, settings) == 0
    assert len(mta.messages) == 1

    # Due, still deferred: the next wait is twice as long.
    make_due(sessions, rid)
    before = utcnow()
    assert outbound.deliver_due(sessions, settings) == 0
    r = row(sessions, rid)
    assert r.attempts == 2
    assert r.next_attempt_at >= before + timedelta(seconds=119)

    # Due, and the server takes it now.
    del mta.refuse["bob@example.com"]
    make_due(sessions, rid)
    assert outbound.deliver_due(sessions, settings) == 1
    assert [m.recipients for m in mta.to("bob@example.com")] == [("bob@example.com",)]
    r = row(sessions, rid)
    assert (r.status, r.attempts) == (OutboxStatus.sent, 3)


def test_every_recipient_deferred(sessions: sessionmaker[Session], mta: Sink, settings: Settings):
    mta.refuse["anne@example.com"] = "450 4.2.1 mailbox busy"
    mta.refuse["bob@example.com"] = "451 4.3.0 later"
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com"])
    assert outbound.deliver_due(sessions, settings) == 0
    assert mta.messages == []
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.recipients == ["anne@example.com", "bob@example.com"]
    assert r.next_attempt_at > utcnow()


def test_unreachable_server_keeps_the_row(sessions: sessionmaker[Session]):
    rid = enqueue(sessions, ["anne@example.com"])
    assert outbound.deliver_due(sessions, settings_for(free_port())) == 0
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.attempts == 1
    assert r.recipients == ["anne@example.com"]
    assert "ConnectionRefusedError" in r.last_error
    assert r.next_attempt_at > utcnow()


def test_permanent_refusal_of_some_recipients_is_not_retried(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    mta.refuse["gone@example.com"] = "550 5.1.1 no such user"
    rid = enqueue(sessions, ["anne@example.com", "gone@example.com"])
    assert outbound.deliver_due(sessions, settings) == 1
    assert mta.recipients() == {"anne@example.com"}
    assert row(sessions, rid).status is OutboxStatus.sent


def test_permanent_refusal_of_every_recipient_marks_the_row_failed(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    mta.refuse["gone@example.com"] = "550 5.1.1 no such user"
    mta.refuse["left@example.com"] = "554 5.7.1 not here"
    rid = enqueue(sessions, ["gone@example.com", "left@example.com"])
    assert outbound.deliver_due(sessions, settings) == 0
    assert mta.messages == []
    r = row(sessions, rid)
    assert r.status is OutboxStatus.failed
    assert "550" in r.last_error
    # A failed row is not tried again.
    make_due(sessions, rid)
    outbound.deliver_due(sessions, settings)
    assert row(sessions, rid).attempts == 1


def test_mixed_4xx_and_5xx_retries_only_the_4xx(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    mta.refuse["gone@example.com"] = "550 5.1.1 no such user"
    mta.refuse["busy@example.com"] = "452 4.2.2 full"
    rid = enqueue(sessions, ["gone@example.com", "busy@example.com"])
    assert outbound.deliver_due(sessions, settings) == 0
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.recipients == ["busy@example.com"]


def test_recipients_are_sent_in_batches(sessions: sessionmaker[Session], mta: Sink):
    people = [f"user{i}@example.com" for i in range(5)]
    rid = enqueue(sessions, people)
    assert outbound.deliver_due(sessions, settings_for(mta.port, max_recipients=2)) == 1
    assert [m.recipients for m in mta.messages] == [
        ("user0@example.com", "user1@example.com"),
        ("user2@example.com", "user3@example.com"),
        ("user4@example.com",),
    ]
    assert row(sessions, rid).status is OutboxStatus.sent


def test_gives_up_after_the_retry_period(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    mta.refuse["bob@example.com"] = "451 4.2.0 try later"
    rid = enqueue(sessions, ["bob@example.com"])
    make_due(sessions, rid, created_at=utcnow() - outbound.RETRY_PERIOD - timedelta(hours=1))
    assert outbound.deliver_due(sessions, settings) == 0
    r = row(sessions, rid)
    assert r.status is OutboxStatus.failed
    assert r.last_error


def test_only_due_rows_in_order_and_up_to_the_limit(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    later = enqueue(sessions, ["later@example.com"])
    with sessions.begin() as s:
        s.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == later)
            .values(next_attempt_at=utcnow() + timedelta(hours=1))
        )
    first = enqueue(sessions, ["first@example.com"])
    second = enqueue(sessions, ["second@example.com"])
    make_due(sessions, second)  # due a moment before ``first``
    assert outbound.deliver_due(sessions, settings, limit=1) == 1
    assert mta.recipients() == {"second@example.com"}
    assert outbound.deliver_due(sessions, settings) == 1
    assert mta.recipients() == {"second@example.com", "first@example.com"}
    assert row(sessions, first).status is OutboxStatus.sent
    assert row(sessions, later).status is OutboxStatus.queued
    assert row(sessions, later).attempts == 0
