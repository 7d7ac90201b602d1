"""mtaplugin.relay.smtp: the SMTP transport, against a real SMTP server (the aiosmtpd
sink), and a delivery on the system clock (leases on the database's clock on PostgreSQL).

Connections that break are made with an ``smtplib.SMTP`` subclass given to the transport
(its ``client``), not by patching smtplib.
"""

from __future__ import annotations

import smtplib
import socket
from collections import Counter
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import ManualClock, system_clock
from mtaplugin.enums import OutboxStatus
from mtaplugin.model.base import utcnow
from mtaplugin.relay.deliver import Delivery
from mtaplugin.relay.smtp import Replies, SmtpTransport
from mtaplugin.testing import free_port
from mtaplugin.testing.sink import Sink
from tests.unit.outbox.util import (
    RAW,
    delivery_for,
    enqueue,
    enqueue_posts,
    message_ids,
    outbound,
    row,
    set_lease,
)


def smtp_delivery(
    sessions: sessionmaker[Session],
    port: int,
    clock: ManualClock,
    client: type[smtplib.SMTP] = smtplib.SMTP,
    **values: Any,
) -> Delivery:
    out = outbound(port, **values)
    transport = SmtpTransport(out.host, out.port, out.timeout, out.max_recipients, client)
    return Delivery(sessions, out, transport=transport, clock=clock)


def test_one_transaction_answers_each_recipient(sink: Sink) -> None:
    sink.refuse["busy@example.com"] = "452 4.2.2 full"
    sink.refuse["gone@example.com"] = "550 5.1.1 no such user"
    conn = SmtpTransport("127.0.0.1", sink.port, 5.0).open()
    try:
        replies = conn.send(
            "team-bounces@lists.test",
            ["anne@example.com", "busy@example.com", "gone@example.com"],
            RAW,
        )
    finally:
        conn.close()
    assert replies == Replies(
        accepted=["anne@example.com"],
        deferred={"busy@example.com": "452 4.2.2 full"},
        refused={"gone@example.com": "550 5.1.1 no such user"},
    )
    assert sink.recipients() == {"anne@example.com"}


def test_an_address_that_needs_smtputf8_goes_with_it(sink: Sink) -> None:
    conn = SmtpTransport("127.0.0.1", sink.port, 5.0).open()
    try:
        replies = conn.send("team-bounces@lists.test", ["jörg@example.com"], RAW)
    finally:
        conn.close()
    assert replies == Replies(accepted=["jörg@example.com"])
    assert sink.recipients() == {"jörg@example.com"}


def test_a_connection_that_died_between_rows_is_opened_again(
    sessions: sessionmaker[Session], sink: Sink, clock: ManualClock
) -> None:
    class HangsUp(smtplib.SMTP):
        def sendmail(self, *args: Any, **kw: Any) -> Any:
            refused = super().sendmail(*args, **kw)
            assert self.sock is not None
            self.sock.shutdown(socket.SHUT_RDWR)  # the line went dead after this transaction
            return refused

    expected = enqueue_posts(sessions, rows=3, recipients=1, now=clock())
    assert smtp_delivery(sessions, sink.port, clock, HangsUp).run().sent == 3
    assert sorted(message_ids(sink.messages)) == sorted(expected)
    assert sink.greetings == 3  # RSET found each one dead


def test_a_chunk_cut_off_by_a_broken_connection_is_sent_on_a_new_one(
    sessions: sessionmaker[Session], sink: Sink, clock: ManualClock
) -> None:
    calls: Counter[str] = Counter()

    class BreaksOnce(smtplib.SMTP):
        def sendmail(self, *args: Any, **kw: Any) -> Any:
            calls["sendmail"] += 1
            if calls["sendmail"] == 2:
                raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")
            return super().sendmail(*args, **kw)

    expected = enqueue_posts(sessions, rows=2, recipients=4, now=clock())
    delivery = smtp_delivery(sessions, sink.port, clock, BreaksOnce, max_recipients=2)
    assert delivery.run().sent == 2
    assert sorted(message_ids(sink.messages)) == sorted(expected)
    assert sink.greetings == 2


def test_a_connection_broken_twice_in_one_row_defers_it(
    sessions: sessionmaker[Session], sink: Sink, clock: ManualClock
) -> None:
    class AlwaysBreaks(smtplib.SMTP):
        def sendmail(self, *args: Any, **kw: Any) -> Any:
            raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")

    rid = enqueue(sessions, ["anne@example.com"], now=clock())
    result = smtp_delivery(sessions, sink.port, clock, AlwaysBreaks).run()
    assert (result.sent, result.deferred) == (0, 1)
    r = row(sessions, rid)
    assert (r.status, r.recipients) == (OutboxStatus.queued, ["anne@example.com"])
    assert "SMTPServerDisconnected" in r.last_error
    assert r.next_attempt_at == clock() + timedelta(minutes=1)


def test_unreachable_server_keeps_the_row(
    sessions: sessionmaker[Session], clock: ManualClock
) -> None:
    rid = enqueue(sessions, ["anne@example.com"], now=clock())
    assert smtp_delivery(sessions, free_port(), clock).run().sent == 0
    r = row(sessions, rid)
    assert r.status is OutboxStatus.queued
    assert r.attempts == 1
    assert r.recipients == ["anne@example.com"]
    assert "ConnectionRefusedError" in r.last_error
    assert r.next_attempt_at == clock() + timedelta(minutes=1)


def test_an_unreachable_mta_defers_the_whole_pass(
    sessions: sessionmaker[Session], clock: ManualClock
) -> None:
    ids = [enqueue(sessions, [f"{n}@example.com"], now=clock()) for n in ("a", "b", "c")]
    result = smtp_delivery(sessions, free_port(), clock).run()
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
        assert r.next_attempt_at == clock() + timedelta(minutes=1)


def test_on_the_system_clock_a_dead_workers_rows_come_back_when_its_lease_ran_out(
    sessions: sessionmaker[Session], sink: Sink
) -> None:
    """The worker's own clock: on PostgreSQL the leases are measured on the database's."""
    rid = enqueue(sessions, ["anne@example.com"])
    set_lease(sessions, rid, "dead-host:99:abc", utcnow(), -1)
    delivery = delivery_for(sessions, sink, system_clock)
    assert delivery.run().sent == 1
    r = row(sessions, rid)
    assert (r.status, r.claimed_by, r.claimed_until) == (OutboxStatus.sent, None, None)
    assert sink.recipients() == {"anne@example.com"}
    held = enqueue(sessions, ["held@example.com"])
    set_lease(sessions, held, "other-host:123:abc", utcnow(), 3600)
    assert delivery.run().claimed == 0


def test_lines_leave_with_crlf_ends(sink: Sink) -> None:
    """A notice rendered with LF line ends goes out with CRLF (Sendmail refuses a bare
    LF: 421 4.5.0)."""
    conn = SmtpTransport("127.0.0.1", sink.port, 5.0).open()
    try:
        raw = b"From: a@lists.test\nSubject: lf\n\nline one\nline two\r\nline three\n"
        replies = conn.send("team-bounces@lists.test", ["anne@example.com"], raw)
    finally:
        conn.close()
    assert replies.accepted == ["anne@example.com"]
    (got,) = sink.messages
    assert got.data.count(b"\n") == got.data.count(b"\r\n") == 6
    assert b"line one\r\nline two\r\nline three" in got.data
