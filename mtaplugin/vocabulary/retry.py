"""The retry policy of the queues the scheduler's jobs drain towards another server (the
news server, the external archivers): a failed hand-off waits :data:`BACKOFF_FIRST`,
doubling up to :data:`BACKOFF_MAX`; a temporary failure is tried again until the row is
:data:`GIVE_UP_AFTER` old, a permanent one (or a too old one) marks the row failed and
keeps it with its last error."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

BACKOFF_FIRST = timedelta(minutes=1)
BACKOFF_MAX = timedelta(hours=1)
GIVE_UP_AFTER = timedelta(days=5)


class QueuedRow(Protocol):
    """A queue row the policy updates (news_queue, archiver_queue)."""

    attempts: int
    last_error: str
    failed: bool
    queued_at: datetime
    next_attempt_at: datetime


def backoff(attempts: int) -> timedelta:
    """The wait after the ``attempts``-th failed try (1, 2, ...)."""
    wait: timedelta = BACKOFF_FIRST * (2 ** min(max(attempts - 1, 0), 20))
    return min(wait, BACKOFF_MAX)


def failed_try(row: QueuedRow, error: str, temporary: bool, now: datetime) -> bool:
    """Count one failed try of ``row``; True when it is given up (marked failed), else its
    next attempt is set."""
    row.attempts += 1
    row.last_error = error
    if not temporary or now - row.queued_at >= GIVE_UP_AFTER:
        row.failed = True
        return True
    row.next_attempt_at = now + backoff(row.attempts)
    return False
