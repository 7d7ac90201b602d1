"""mtaplugin.outbox.deliver: the outbox, submitted to a real SMTP server (the aiosmtpd sink)."""

from __future__ import annotations

import email
import smtplib
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import delete, update
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.config import OutboundSettings, Settings
from mtaplugin.model import OutboxMessage
from mtaplugin.model.base import utcnow
from mtaplugin.model.enums import OutboxStatus
from mtaplugin.outbox import deliver
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
        return deliver.enqueue(s, "team-bounces@lists.test", recipients, RAW, **kw).id


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
    assert deliver.backoff(0) == timedelta(minutes=1)
    assert deliver.backoff(1) == timedelta(minutes=1)
    assert deliver.backoff(2) == timedelta(minutes=2)
    assert deliver.backoff(3) == timedelta(minutes=4)
    assert deliver.backoff(7) == timedelta(minutes=60)
    assert deliver.backoff(30) == timedelta(hours=1)


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
        deliver.enqueue(s, "x@lists.test", ["anne@example.com"], RAW)
        s.rollback()
    with sessions() as s:
        assert s.query(OutboxMessage).count() == 0


def test_delivery_marks_the_row_sent(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com"])
    assert deliver.deliver_due(sessions, settings) == 1
    (got,) = mta.messages
    assert got.mail_from == "team-bounces@lists.test"
    assert got.recipients == ("anne@example.com", "bob@example.com")
    assert same_message(got.data, RAW)
    r = row(sessions, rid)
    assert r.status is OutboxStatus.sent
    assert r.attempts == 1
    # Sent rows are not sent again.
    assert deliver.deliver_due(sessions, settings) == 0
    assert len(mta.messages) == 1


def test_a_4xx_recipient_is_retried_later_with_backoff(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    mta.refuse["bob@example.com"] = "451 4.2.0 try later"
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com"])
    before = utcnow()
    assert deliver.deliver_due(sessions, settings) == 0
    assert mta.recipients() == {"anne@example.com"}
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.attempts == 1
    # Only the deferred recipient is left: anne does not get a second copy.
    assert r.recipients == ["bob@example.com"]
    assert r.last_error
    assert before + timedelta(seconds=59) <= r.next_attempt_at <= utcnow() + timedelta(seconds=61)

    # Not due yet: nothing happens.
    assert deliver.deliver_due(sessions, settings) == 0
    assert len(mta.messages) == 1

    # Due, still deferred: the next wait is twice as long.
    make_due(sessions, rid)
    before = utcnow()
    assert deliver.deliver_due(sessions, settings) == 0
    r = row(sessions, rid)
    assert r.attempts == 2
    assert r.next_attempt_at >= before + timedelta(seconds=119)

    # Due, and the server takes it now.
    del mta.refuse["bob@example.com"]
    make_due(sessions, rid)
    assert deliver.deliver_due(sessions, settings) == 1
    assert [m.recipients for m in mta.to("bob@example.com")] == [("bob@example.com",)]
    r = row(sessions, rid)
    assert (r.status, r.attempts) == (OutboxStatus.sent, 3)


def test_every_recipient_deferred(sessions: sessionmaker[Session], mta: Sink, settings: Settings):
    mta.refuse["anne@example.com"] = "450 4.2.1 mailbox busy"
    mta.refuse["bob@example.com"] = "451 4.3.0 later"
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com"])
    assert deliver.deliver_due(sessions, settings) == 0
    assert mta.messages == []
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.recipients == ["anne@example.com", "bob@example.com"]
    assert r.next_attempt_at > utcnow()


def test_unreachable_server_keeps_the_row(sessions: sessionmaker[Session]):
    rid = enqueue(sessions, ["anne@example.com"])
    assert deliver.deliver_due(sessions, settings_for(free_port())) == 0
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
    assert deliver.deliver_due(sessions, settings) == 1
    assert mta.recipients() == {"anne@example.com"}
    assert row(sessions, rid).status is OutboxStatus.sent


def test_permanent_refusal_of_every_recipient_marks_the_row_failed(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    mta.refuse["gone@example.com"] = "550 5.1.1 no such user"
    mta.refuse["left@example.com"] = "554 5.7.1 not here"
    rid = enqueue(sessions, ["gone@example.com", "left@example.com"])
    assert deliver.deliver_due(sessions, settings) == 0
    assert mta.messages == []
    r = row(sessions, rid)
    assert r.status is OutboxStatus.failed
    assert "550" in r.last_error
    # A failed row is not tried again.
    make_due(sessions, rid)
    deliver.deliver_due(sessions, settings)
    assert row(sessions, rid).attempts == 1


def test_mixed_4xx_and_5xx_retries_only_the_4xx(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    mta.refuse["gone@example.com"] = "550 5.1.1 no such user"
    mta.refuse["busy@example.com"] = "452 4.2.2 full"
    rid = enqueue(sessions, ["gone@example.com", "busy@example.com"])
    assert deliver.deliver_due(sessions, settings) == 0
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.recipients == ["busy@example.com"]


def test_recipients_are_sent_in_batches(sessions: sessionmaker[Session], mta: Sink):
    people = [f"user{i}@example.com" for i in range(5)]
    rid = enqueue(sessions, people)
    assert deliver.deliver_due(sessions, settings_for(mta.port, max_recipients=2)) == 1
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
    period = timedelta(seconds=settings.outbound.retry_period)
    make_due(sessions, rid, created_at=utcnow() - period - timedelta(hours=1))
    assert deliver.deliver_due(sessions, settings) == 0
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
    assert deliver.deliver_due(sessions, settings, limit=1) == 1
    assert mta.recipients() == {"second@example.com"}
    assert deliver.deliver_due(sessions, settings) == 1
    assert mta.recipients() == {"second@example.com", "first@example.com"}
    assert row(sessions, first).status is OutboxStatus.sent
    assert row(sessions, later).status is OutboxStatus.queued
    assert row(sessions, later).attempts == 0


# --- settings, batches and the one connection ---------------------------------------------
def outbound_settings(port: int, **values) -> Settings:
    base = {"host": "127.0.0.1", "port": port, "timeout": 5.0}
    return Settings(outbound=OutboundSettings(**{**base, **values}))


def message_ids(sink: Sink) -> list[tuple[str, str]]:
    """Every (Message-ID, recipient) pair the sink received, duplicates included."""
    pairs = []
    for m in sink.messages:
        mid = email.message_from_bytes(m.data)["Message-ID"]
        pairs.extend((mid, r) for r in m.recipients)
    return pairs


def enqueue_posts(sessions: sessionmaker[Session], rows: int, recipients: int) -> set:
    """``rows`` rows, each its own Message-ID; return the (Message-ID, recipient) pairs."""
    expected = set()
    with sessions.begin() as s:
        for i in range(rows):
            people = [f"r{i}-{j}@example.com" for j in range(recipients)]
            raw = make_post("team-owner@lists.test", "team@lists.test", subject=f"n{i}")
            deliver.enqueue(s, "team-bounces@lists.test", people, raw)
            mid = email.message_from_bytes(raw)["Message-ID"]
            expected |= {(mid, p) for p in people}
    return expected


def test_backoff_follows_the_settings():
    out = OutboundSettings(backoff_first=10, backoff_max=35)
    assert [deliver.backoff(n, out).total_seconds() for n in (1, 2, 3, 4, 500)] == [
        10,
        20,
        35,
        35,
        35,
    ]


def test_the_retry_period_is_a_setting(sessions: sessionmaker[Session], mta: Sink):
    mta.refuse["bob@example.com"] = "451 4.2.0 try later"
    rid = enqueue(sessions, ["bob@example.com"])
    make_due(sessions, rid, created_at=utcnow() - timedelta(seconds=120))
    deliver.deliver_due(sessions, outbound_settings(mta.port, retry_period=300))
    assert row(sessions, rid).status is OutboxStatus.queued
    make_due(sessions, rid)
    deliver.deliver_due(sessions, outbound_settings(mta.port, retry_period=60))
    assert row(sessions, rid).status is OutboxStatus.failed


def test_a_pass_takes_at_most_batch_size_rows(sessions: sessionmaker[Session], mta: Sink):
    for name in ("a", "b", "c"):
        enqueue(sessions, [f"{name}@example.com"])
    settings = outbound_settings(mta.port, batch_size=2)
    result = deliver.deliver_pass(sessions, settings)
    assert (result.claimed, result.sent) == (2, 2)
    assert deliver.deliver_pass(sessions, settings).sent == 1
    assert deliver.deliver_pass(sessions, settings).claimed == 0
    assert mta.recipients() == {"a@example.com", "b@example.com", "c@example.com"}


@pytest.fixture
def smtp_calls(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Counts the SMTP client's connects and RSETs."""
    calls: Counter = Counter()
    connect, rset = smtplib.SMTP.connect, smtplib.SMTP.rset

    def counting_connect(self, *args, **kw):
        calls["connect"] += 1
        return connect(self, *args, **kw)

    def counting_rset(self):
        calls["rset"] += 1
        return rset(self)

    monkeypatch.setattr(smtplib.SMTP, "connect", counting_connect)
    monkeypatch.setattr(smtplib.SMTP, "rset", counting_rset)
    return calls


def test_one_connection_for_the_whole_pass_with_rset_between_rows(
    sessions: sessionmaker[Session], mta: Sink, smtp_calls: Counter
):
    expected = enqueue_posts(sessions, rows=4, recipients=3)
    assert deliver.deliver_due(sessions, outbound_settings(mta.port, max_recipients=2)) == 4
    assert sorted(message_ids(mta)) == sorted(expected)
    assert len(mta.messages) == 8  # two transactions per row
    assert smtp_calls == {"connect": 1, "rset": 3}


def test_a_connection_that_died_between_rows_is_opened_again(
    sessions: sessionmaker[Session], mta: Sink, smtp_calls: Counter, monkeypatch
):
    expected = enqueue_posts(sessions, rows=3, recipients=1)
    sendmail = smtplib.SMTP.sendmail

    def then_hang_up(self, *args, **kw):
        refused = sendmail(self, *args, **kw)
        self.sock.shutdown(socket.SHUT_RDWR)  # the line went dead after this transaction
        return refused

    monkeypatch.setattr(smtplib.SMTP, "sendmail", then_hang_up)
    assert deliver.deliver_due(sessions, outbound_settings(mta.port)) == 3
    assert sorted(message_ids(mta)) == sorted(expected)
    assert smtp_calls["connect"] == 3  # RSET found each one dead


def test_a_chunk_cut_off_by_a_broken_connection_is_sent_on_a_new_one(
    sessions: sessionmaker[Session], mta: Sink, smtp_calls: Counter, monkeypatch
):
    expected = enqueue_posts(sessions, rows=2, recipients=4)
    sendmail = smtplib.SMTP.sendmail
    calls = Counter()

    def breaks_once(self, *args, **kw):
        calls["sendmail"] += 1
        if calls["sendmail"] == 2:
            raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")
        return sendmail(self, *args, **kw)

    monkeypatch.setattr(smtplib.SMTP, "sendmail", breaks_once)
    assert deliver.deliver_due(sessions, outbound_settings(mta.port, max_recipients=2)) == 2
    assert sorted(message_ids(mta)) == sorted(expected)
    assert smtp_calls["connect"] == 2


def test_a_421_loses_none_of_the_recipients_not_yet_named(
    sessions: sessionmaker[Session], mta: Sink, smtp_calls: Counter
):
    # smtplib gives up on the transaction at a 421 and closes: anne's RCPT had been
    # accepted, but no data went, and carol was never named.
    mta.refuse["bob@example.com"] = "421 4.3.2 shutting down"
    rid = enqueue(sessions, ["anne@example.com", "bob@example.com", "carol@example.com"])
    assert deliver.deliver_due(sessions, settings_for(mta.port)) == 0
    assert sorted(r for m in mta.messages for r in m.recipients) == [
        "anne@example.com",
        "carol@example.com",
    ]
    r = row(sessions, rid)
    assert (r.status, r.recipients) == (OutboxStatus.queued, ["bob@example.com"])
    assert "421" in r.last_error
    assert smtp_calls["connect"] == 2


def test_an_unreachable_mta_defers_the_whole_pass(sessions: sessionmaker[Session]):
    ids = [enqueue(sessions, [f"{n}@example.com"]) for n in ("a", "b", "c")]
    result = deliver.deliver_pass(sessions, settings_for(free_port()))
    assert (result.claimed, result.sent, result.deferred) == (3, 0, 3)
    for rid in ids:
        r = row(sessions, rid)
        assert (r.status, r.attempts, r.claimed_by, r.claimed_until) == (
            OutboxStatus.queued,
            1,
            None,
            None,
        )
        assert "ConnectionRefusedError" in r.last_error
        assert r.next_attempt_at > utcnow() + timedelta(seconds=50)


# --- progress, leases and crashes ---------------------------------------------------------
class Crash(BaseException):
    """Stands for a kill: nothing of mtaplugin's error handling catches it."""


def crash_at(monkeypatch: pytest.MonkeyPatch, call: int, after_sending: bool) -> None:
    """Make the ``call``-th SMTP transaction crash the worker, before it starts or just
    after the MTA's 250 (before the worker could commit)."""
    sendmail = smtplib.SMTP.sendmail
    calls = Counter()

    def crashing(self, *args, **kw):
        calls["n"] += 1
        if calls["n"] == call and not after_sending:
            raise Crash
        refused = sendmail(self, *args, **kw)
        if calls["n"] == call:
            raise Crash
        return refused

    monkeypatch.setattr(smtplib.SMTP, "sendmail", crashing)


def test_progress_is_committed_after_every_chunk(
    sessions: sessionmaker[Session], mta: Sink, monkeypatch: pytest.MonkeyPatch
):
    people = [f"user{i}@example.com" for i in range(5)]
    rid = enqueue(sessions, people)
    settings = settings_for(mta.port, max_recipients=2)
    crash_at(monkeypatch, 3, after_sending=False)
    with pytest.raises(Crash):
        deliver.deliver_due(sessions, settings)
    assert row(sessions, rid).recipients == ["user4@example.com"]
    monkeypatch.undo()
    assert deliver.deliver_due(sessions, settings) == 1
    assert sorted(r for m in mta.messages for r in m.recipients) == people  # once each


def test_a_crash_after_the_250_sends_only_that_chunk_twice(
    sessions: sessionmaker[Session], mta: Sink, monkeypatch: pytest.MonkeyPatch
):
    """The window SMTP leaves open: the MTA took chunk 2, the worker died before it could
    commit that.  Chunk 2 goes again (a duplicate, not a loss); chunk 1 does not."""
    people = [f"user{i}@example.com" for i in range(5)]
    rid = enqueue(sessions, people)
    settings = settings_for(mta.port, max_recipients=2)
    crash_at(monkeypatch, 2, after_sending=True)
    with pytest.raises(Crash):
        deliver.deliver_due(sessions, settings)
    assert row(sessions, rid).recipients == people[2:]
    monkeypatch.undo()
    assert deliver.deliver_due(sessions, settings) == 1
    got = Counter(r for m in mta.messages for r in m.recipients)
    assert got == {p: 2 if p in people[2:4] else 1 for p in people}


def set_lease(sessions: sessionmaker[Session], row_id: int, by: str, seconds: float) -> None:
    with sessions.begin() as s:
        s.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == row_id)
            .values(claimed_by=by, claimed_until=utcnow() + timedelta(seconds=seconds))
        )


def test_a_row_another_worker_holds_is_left_alone(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    held = enqueue(sessions, ["held@example.com"])
    free = enqueue(sessions, ["free@example.com"])
    set_lease(sessions, held, "other-host:123:abc", 3600)
    assert deliver.deliver_due(sessions, settings) == 1
    assert mta.recipients() == {"free@example.com"}
    r = row(sessions, held)
    assert (r.status, r.attempts, r.claimed_by) == (OutboxStatus.queued, 0, "other-host:123:abc")
    assert row(sessions, free).claimed_by is None


def test_the_rows_of_a_dead_worker_are_picked_again_when_its_lease_ran_out(
    sessions: sessionmaker[Session], mta: Sink, settings: Settings
):
    rid = enqueue(sessions, ["anne@example.com"])
    set_lease(sessions, rid, "dead-host:99:abc", -1)
    assert deliver.deliver_due(sessions, settings) == 1
    r = row(sessions, rid)
    assert (r.status, r.claimed_by, r.claimed_until) == (OutboxStatus.sent, None, None)
    assert mta.recipients() == {"anne@example.com"}


def test_a_pass_that_lost_its_lease_stops_sending_the_row(
    sessions: sessionmaker[Session], mta: Sink, monkeypatch: pytest.MonkeyPatch
):
    people = [f"user{i}@example.com" for i in range(6)]
    rid = enqueue(sessions, people)
    sendmail = smtplib.SMTP.sendmail

    def then_lose_the_lease(self, *args, **kw):
        refused = sendmail(self, *args, **kw)
        set_lease(sessions, rid, "thief:1:abc", 3600)  # our lease ran out; another took it
        return refused

    monkeypatch.setattr(smtplib.SMTP, "sendmail", then_lose_the_lease)
    assert deliver.deliver_due(sessions, settings_for(mta.port, max_recipients=2)) == 0
    assert [m.recipients for m in mta.messages] == [("user0@example.com", "user1@example.com")]
    r = row(sessions, rid)
    # The commit after chunk 1 found the thief: nothing of ours was written.
    assert (r.claimed_by, r.recipients) == ("thief:1:abc", people)


def test_a_stop_between_chunks_gives_the_row_back_where_it_is(
    sessions: sessionmaker[Session], mta: Sink
):
    people = [f"user{i}@example.com" for i in range(5)]
    rid = enqueue(sessions, people)
    other = enqueue(sessions, ["other@example.com"])
    settings = settings_for(mta.port, max_recipients=2)
    result = deliver.deliver_pass(sessions, settings, should_stop=lambda: bool(mta.messages))
    assert (result.claimed, result.sent) == (2, 0)
    r = row(sessions, rid)
    assert (r.status, r.recipients, r.claimed_by) == (OutboxStatus.queued, people[2:], None)
    assert r.next_attempt_at <= utcnow()  # due at once, for the next worker
    assert row(sessions, other).claimed_by is None
    assert deliver.deliver_due(sessions, settings) == 2
    assert sorted(r for m in mta.messages for r in m.recipients) == sorted(
        [*people, "other@example.com"]
    )


def test_two_workers_at_once_never_send_the_same_row(sessions: sessionmaker[Session], mta: Sink):
    expected = enqueue_posts(sessions, rows=40, recipients=4)
    settings = outbound_settings(mta.port, max_recipients=2, batch_size=3)
    start = threading.Barrier(2)
    sent = [0, 0]
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            start.wait()
            while True:
                result = deliver.deliver_pass(sessions, settings)
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
    pairs = message_ids(mta)
    assert len(pairs) == len(set(pairs))  # nothing twice
    assert set(pairs) == expected  # nothing lost
    assert sum(sent) == 40
    assert min(sent) > 0  # both took part
