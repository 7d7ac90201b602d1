"""The outbox's fixtures: one database per backend and test module, an empty outbox per
test, the aiosmtpd sink, and a clock that moves only when a test moves it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import delete
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import ManualClock, system_clock
from mtaplugin.model import OutboxMessage
from mtaplugin.testing import free_port
from mtaplugin.testing.sink import Sink


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
