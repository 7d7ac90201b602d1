"""The outbox's fixtures: one database per backend and test module, an empty outbox per
test, the aiosmtpd sink, a clock that moves only when a test moves it, and deliveries:
``deliver`` to ``mta`` (the in-memory MTA, then the sink over SMTP), ``deliver_fake`` to
the in-memory MTA ``fake``; ``out`` the four of ``mta`` together, ``box`` the four of the
in-memory MTA's tests together."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import delete
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import ManualClock, system_clock
from mtaplugin.model import OutboxMessage
from mtaplugin.testing import free_port
from mtaplugin.testing.sink import Sink
from mtaplugin.testing.transport import FakeTransport
from tests.unit.outbox.util import FakeOutbox, MakeDelivery, Mta, Outbox, delivery_for


@pytest.fixture
def sessions(module_sessions: sessionmaker[Session]) -> sessionmaker[Session]:
    with module_sessions.begin() as s:
        s.execute(delete(OutboxMessage))
    return module_sessions


@pytest.fixture(scope="module")
def module_sink() -> Iterator[Sink]:
    s = Sink(free_port()).start()
    yield s
    s.stop()


@pytest.fixture
def sink(module_sink: Sink) -> Sink:
    module_sink.clear()
    module_sink.refuse.clear()
    return module_sink


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(system_clock())


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
def out(
    sessions: sessionmaker[Session], mta: Mta, deliver: MakeDelivery, clock: ManualClock
) -> Outbox:
    return Outbox(sessions, mta, deliver, clock)


@pytest.fixture
def deliver_fake(
    sessions: sessionmaker[Session], fake: FakeTransport, clock: ManualClock
) -> MakeDelivery:
    return lambda **values: delivery_for(sessions, fake, clock, **values)


@pytest.fixture
def box(
    sessions: sessionmaker[Session],
    fake: FakeTransport,
    deliver_fake: MakeDelivery,
    clock: ManualClock,
) -> FakeOutbox:
    return FakeOutbox(sessions, fake, deliver_fake, clock)
