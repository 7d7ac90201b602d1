"""The MTA's re-injection listener refusing (4xx) or stalling (the connection accepted, no
word said) while posts come in.

A private Postfix with ``mtaplugin serve``; the list is anonymous, so its copy goes through
the outbox, and the outbox's listener is one this test controls (``outbox.port``): an SMTP
sink that answers every recipient ``451`` for a while, or a socket that accepts and never
answers, then a sink that takes everything.  Each post still gets its 250 at once (the
copy is committed to the outbox first); the outbox keeps the rows while the listener
cannot take them and delivers every copy once after.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.enums import OutboxStatus
from mtaplugin.manage import lists, members
from mtaplugin.model import OutboxMessage
from mtaplugin.testing import free_port
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailauth import lab_dns  # noqa: F401  (a pytest fixture)
from mtaplugin.testing.sink import Received, Sink
from tests.faults.ledger import RUNS, FaultRow, record
from tests.faults.procs import (
    DOMAIN,
    SLOW,
    backend_of,
    count_into,
    fault_lab,
    lab_database,
    offer,
    require_root,
    settle,
)

pytestmark = SLOW

MEMBERS = ("ann@example.com", "bob@example.net", "cy@example.org")
LIST = f"anon@{DOMAIN}"
#: how long the listener refuses or stalls
OUTAGE = 4.0
#: seconds the worker waits for each reply of the listener
TIMEOUT = 2


class Staller:
    """Accepts connections on ``port`` and never says a word."""

    def __init__(self, port: int) -> None:
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", port))
        self.server.listen(16)
        self.server.settimeout(0.2)
        self.held: list[socket.socket] = []
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopping:
            try:
                conn, _addr = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.held.append(conn)

    def stop(self) -> int:
        """Close everything; how many connections it held."""
        self.stopping = True
        self.thread.join(5)
        self.server.close()
        for conn in self.held:
            conn.close()
        return len(self.held)


class LateSink(Sink):
    """Takes each of the first ``stalls`` messages, then says nothing for longer than the
    worker waits (``outbox.timeout``) before its 250: the worker cannot know it was taken."""

    def __init__(self, port: int, stalls: int) -> None:
        super().__init__(port)
        self.stalls = stalls
        self.stalled = 0

    def add(self, msg: Received) -> None:
        super().add(msg)
        if self.stalled < self.stalls:
            self.stalled += 1
            time.sleep(TIMEOUT + 1.5)  # (the sink's one event loop: everything waits)


@pytest.fixture(scope="module")
def listener_lab(
    request: pytest.FixtureRequest,
    lab_root: Path,
    lab_dns: DnsServer,  # noqa: F811
) -> Iterator[tuple[Lab, int]]:
    require_root()
    url = lab_database(request, lab_root, "sqlite")
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        mlist = lists.create(s, LIST)
        mlist.anonymous_list = True
        for m in MEMBERS:
            members.add(s, mlist, m)
    engine.dispose()
    port = free_port()
    lab = fault_lab(
        lab_root / "listener-sqlite",
        url,
        lab_dns,
        MTAPLUGIN_OUTBOX_PORT=str(port),
        MTAPLUGIN_OUTBOX_XVERP="false",
        MTAPLUGIN_OUTBOX_TIMEOUT=str(TIMEOUT),
        MTAPLUGIN_OUTBOX_BACKOFF_FIRST="1",
        MTAPLUGIN_OUTBOX_BACKOFF_MAX="2",
    )
    try:
        lab.start()
    except BaseException:
        lab.stop()
        raise
    yield lab, port
    lab.stop()


def statuses(url: str, markers: list[str]) -> dict[str, int]:
    """The outbox rows carrying these posts, by status."""
    engine = make_engine(url)
    needles = [f"body {m}".encode() for m in markers]
    try:
        with sessionmaker_for(engine)() as s:
            found: dict[str, int] = {}
            for o in s.scalars(select(OutboxMessage)):
                if any(n in o.raw for n in needles):
                    found[o.status.value] = found.get(o.status.value, 0) + 1
            return found
    finally:
        engine.dispose()


@pytest.mark.parametrize("fault", ["refusing", "stalling"])
def test_the_listener_refusing_or_stalling_loses_nothing_and_holds_up_no_post(
    listener_lab: tuple[Lab, int], fault: str
) -> None:
    lab, port = listener_lab
    backend = backend_of(lab.database_url)
    row = FaultRow(f"re-injection listener {fault}", backend)
    seed = random.randrange(1_000_000)
    markers = [f"listener-{fault}-{seed}-{n}" for n in range(5 * RUNS)]
    sink: Sink | None = None
    staller: Staller | None = None
    if fault == "refusing":
        sink = Sink(port).start()
        sink.refuse.update({m: "451 4.3.0 busy, try again later" for m in MEMBERS})
    else:
        staller = Staller(port)
    try:
        started = time.monotonic()
        for marker in markers:
            got = offer(lab.smtp_port, MEMBERS[0], LIST, marker, row)
            # the post's 250 comes at once, whatever the listener does
            assert got.replies == [250], got
        time.sleep(max(0.0, OUTAGE - (time.monotonic() - started)))
        during = statuses(lab.database_url, markers)
        # every copy kept, none sent, none given up
        assert sum(during.values()) == len(markers), during
        assert during.get(OutboxStatus.sent.value, 0) == 0, during
        assert during.get(OutboxStatus.failed.value, 0) == 0, during
        # the listener takes mail again
        if staller is not None:
            row.notes.append(f"{staller.stop()} connections stalled")
            sink = Sink(port).start()
        assert sink is not None
        tries = sink.greetings
        sink.refuse.clear()
        expected = {(m, r) for m in markers for r in MEMBERS}
        got_copies = settle(sink, expected, timeout=60)
        count_into(row, expected, got_copies)
        row.notes.append(f"outbox during the outage {during}, {tries} connections while it refused")
    finally:
        if sink is not None:
            sink.stop()
        if staller is not None and not staller.stopping:
            staller.stop()
    record(row)
    print(row.fault, row.backend, *row.notes)
    assert row.lost == 0, (row, lab.log()[-3000:])
    assert row.duplicates == 0, row


def test_a_listener_silent_after_the_message_makes_at_most_that_chunk_go_twice(
    listener_lab: tuple[Lab, int],
) -> None:
    """The listener takes the message and stalls before its 250: the worker gives up on
    the reply and sends that chunk again later (a duplicate is chosen over a loss)."""
    lab, port = listener_lab
    backend = backend_of(lab.database_url)
    row = FaultRow("re-injection listener silent after data", backend)
    seed = random.randrange(1_000_000)
    markers = [f"listener-late-{seed}-{n}" for n in range(3 * RUNS)]
    sink = LateSink(port, stalls=RUNS)
    sink.start()
    try:
        for marker in markers:
            got = offer(lab.smtp_port, MEMBERS[0], LIST, marker, row)
            assert got.replies == [250], got
        expected = {(m, r) for m in markers for r in MEMBERS}
        count_into(row, expected, settle(sink, expected, timeout=90))
    finally:
        sink.stop()
    row.notes.append(f"{sink.stalled} replies withheld, seed {seed}")
    record(row)
    print(row.fault, row.backend, *row.notes)
    assert row.lost == 0, (row, lab.log()[-3000:])
    # each withheld 250: that one transaction (all of this list's three members) again
    assert row.duplicates <= sink.stalled * len(MEMBERS), row
