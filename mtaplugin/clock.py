"""The clock, passed in: every path that decides by time (pending requests, holds, the
outbox's retries, the scheduler) takes a :data:`Clock` instead of reading the time itself,
so that a test can move time and a scheduler can run a day in a second.

``wiring.build(settings)`` gives the daemons :func:`system_clock`; tests give a
:class:`ManualClock`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

#: A function that answers the current time, timezone-aware, in UTC.
Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The machine's time, in UTC."""
    return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told to: ``clock.advance(days=3)``."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start if start is not None else datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
        if self.now.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start")

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        self.now += delta if delta is not None else timedelta(**kwargs)
        return self.now
