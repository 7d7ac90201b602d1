"""The retry story of every hand-off queue (the news articles, the archivers' hand-offs):
the far end is down, the rows back off on the clock, then go once it is back; a row that
cannot go for five days is given up."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Protocol

START = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)


class QueuedRow(Protocol):
    attempts: int
    last_error: str
    failed: bool
    next_attempt_at: datetime


class FarEnd(Protocol):
    """A stand-in news server or archiver; ``down``: it cannot be reached."""

    down: bool


def backs_off_then_goes(
    rows: Callable[[], Sequence[QueuedRow]],
    run: Callable[[datetime], int],
    far: FarEnd,
    *,
    error: str,
) -> None:
    """Two rows queued at :data:`START`; ``run(now)`` is the job's pass (how many went)."""
    far.down = True
    assert run(START) == 0
    assert [r.attempts for r in rows()] == [1, 1]
    assert rows()[0].next_attempt_at == START + timedelta(minutes=1)
    assert error in rows()[0].last_error
    assert run(START + timedelta(seconds=30)) == 0  # not due yet: nothing tried
    assert [r.attempts for r in rows()] == [1, 1]
    assert run(START + timedelta(minutes=1)) == 0
    assert rows()[0].next_attempt_at == START + timedelta(minutes=3)
    far.down = False
    assert run(START + timedelta(minutes=3)) == 2
    assert list(rows()) == []
    assert run(START + timedelta(minutes=4)) == 0  # nothing left to do


def given_up_after_five_days(
    rows: Callable[[], Sequence[QueuedRow]], run: Callable[[datetime], int], far: FarEnd
) -> None:
    """The last row queued at :data:`START` is tried while the far end is down."""
    far.down = True
    run(START + timedelta(days=4))
    assert not rows()[-1].failed
    run(START + timedelta(days=5))
    assert rows()[-1].failed
