"""Helpers for the outbox's tests: rows, the copies an MTA received, deliveries."""

from __future__ import annotations

import email
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import NamedTuple

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import outbox
from mtaplugin.clock import Clock, ManualClock
from mtaplugin.config import OutboxSettings
from mtaplugin.model import OutboxMessage
from mtaplugin.relay.deliver import Delivery
from mtaplugin.relay.smtp import SmtpTransport, Transport
from mtaplugin.testing.sink import Received, Sink
from mtaplugin.testing.transport import FakeTransport
from tests.helpers import make_post

RAW = make_post("team-owner@lists.test", "anne@example.com", subject="Your post is held")
BOUNCES = "team-bounces@lists.test"

#: what an outbox test sends to: the in-memory MTA or the aiosmtpd sink over SMTP
Mta = FakeTransport | Sink
#: makes a delivery with the ``[outbound]`` values given
MakeDelivery = Callable[..., Delivery]


class Crash(BaseException):
    """Stands for a kill -9: nothing of mtaplugin's error handling catches it."""


def crash_at(number: int) -> Callable[[int], None]:
    """A ``before_send`` hook of the in-memory MTA that crashes at the ``number``-th send."""

    def crash(n: int) -> None:
        if n == number:
            raise Crash

    return crash


class FakeOutbox(NamedTuple):
    """An empty outbox, the in-memory MTA, deliveries to it and the clock, together (the
    ``box`` fixture); unpack it as ``sessions, fake, deliver_fake, clock = box``."""

    sessions: sessionmaker[Session]
    fake: FakeTransport
    deliver: MakeDelivery
    clock: ManualClock

    def queue(self, recipients: list[str]) -> int:
        """A row to ``recipients``, due now."""
        return enqueue(self.sessions, recipients, now=self.clock())

    def killed_pass(self, *, before: int = 0, after: int = 0, max_recipients: int = 2) -> None:
        """A pass killed (:class:`Crash`) ``before`` the MTA's n-th transaction, or
        ``after`` its 250 to it; the MTA's hooks are cleared after it."""
        self.fake.before_send = crash_at(before) if before else None
        self.fake.after_send = crash_at(after) if after else None
        with pytest.raises(Crash):
            self.deliver(max_recipients=max_recipients).run()
        self.fake.before_send = self.fake.after_send = None

    def finished(self, max_recipients: int = 2) -> Counter[str]:
        """The next pass sends the row: the copies each recipient got in all."""
        assert self.deliver(max_recipients=max_recipients).run().sent == 1
        return copies_to(self.fake)


class Outbox(NamedTuple):
    """An empty outbox, the MTA (in memory, then the sink over SMTP), deliveries to it and
    the clock, together (the ``out`` fixture)."""

    sessions: sessionmaker[Session]
    mta: Mta
    deliver: MakeDelivery
    clock: ManualClock

    def queue(self, *recipients: str, refuse: dict[str, str] | None = None) -> int:
        """A row to ``recipients``, due now; the MTA answers ``refuse``'s recipients with
        their reply."""
        self.mta.refuse.update(refuse or {})
        return enqueue(self.sessions, list(recipients), now=self.clock())

    def row(self, row_id: int) -> OutboxMessage:
        return row(self.sessions, row_id)


def outbound(port: int = 0, **values: object) -> OutboxSettings:
    base: dict[str, object] = {"host": "127.0.0.1", "port": port, "timeout": 5.0}
    return OutboxSettings(**{**base, **values})  # type: ignore[arg-type]


def transport_for(mta: Mta, max_recipients: int = 500) -> Transport:
    if isinstance(mta, FakeTransport):
        mta.max_recipients = max_recipients
        return mta
    return SmtpTransport("127.0.0.1", mta.port, 5.0, max_recipients)


def delivery_for(
    sessions: sessionmaker[Session], mta: Mta, clock: Clock, **values: object
) -> Delivery:
    """A delivery to ``mta`` with ``[outbound]`` ``values`` (timeout 5 s)."""
    out = outbound(0 if isinstance(mta, FakeTransport) else mta.port, **values)
    return Delivery(sessions, out, transport=transport_for(mta, out.max_recipients), clock=clock)


def connects(mta: Mta) -> int:
    """Connections the MTA saw opened."""
    return mta.connects if isinstance(mta, FakeTransport) else mta.greetings


def enqueue(
    sessions: sessionmaker[Session],
    recipients: list[str],
    now: datetime | None = None,
    **kw: object,
) -> int:
    with sessions.begin() as s:
        return outbox.enqueue(s, BOUNCES, recipients, RAW, now=now, **kw)  # type: ignore[arg-type]


def enqueue_posts(
    sessions: sessionmaker[Session], rows: int, recipients: int, now: datetime | None = None
) -> set[tuple[str, str]]:
    """``rows`` rows, each its own Message-ID; return the (Message-ID, recipient) pairs."""
    expected = set()
    with sessions.begin() as s:
        for i in range(rows):
            people = [f"r{i}-{j}@example.com" for j in range(recipients)]
            raw = make_post("team-owner@lists.test", "team@lists.test", subject=f"n{i}")
            outbox.enqueue(s, BOUNCES, people, raw, now=now)
            mid = email.message_from_bytes(raw)["Message-ID"]
            expected |= {(mid, p) for p in people}
    return expected


def row(sessions: sessionmaker[Session], row_id: int) -> OutboxMessage:
    with sessions() as s:
        found = s.get(OutboxMessage, row_id)
        assert found is not None
        return found


def set_row(sessions: sessionmaker[Session], row_id: int, **values: object) -> None:
    with sessions.begin() as s:
        s.execute(update(OutboxMessage).where(OutboxMessage.id == row_id).values(**values))


def set_lease(
    sessions: sessionmaker[Session], row_id: int, by: str, now: datetime, seconds: float
) -> None:
    set_row(sessions, row_id, claimed_by=by, claimed_until=now + timedelta(seconds=seconds))


def message_ids(messages: list[Received]) -> list[tuple[str, str]]:
    """Every (Message-ID, recipient) pair received, duplicates included."""
    pairs: list[tuple[str, str]] = []
    for m in messages:
        mid = email.message_from_bytes(m.data)["Message-ID"]
        pairs.extend((mid, r) for r in m.recipients)
    return pairs


def same_message(received: bytes, sent: bytes) -> bool:
    """Equal but for line endings and the transport's trailing line break."""

    def norm(data: bytes) -> bytes:
        return data.replace(b"\r\n", b"\n").rstrip(b"\n")

    return norm(received) == norm(sent)


def copies_to(fake: FakeTransport) -> Counter[str]:
    """How many copies the fake MTA took for each recipient."""
    return Counter(r for m in fake.messages for r in m.recipients)
