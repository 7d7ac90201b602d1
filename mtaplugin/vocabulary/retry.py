"""The one retry policy of every queue that hands rows to another server: the outbox (the
MTA's re-injection listener), the news queue (the news server) and the archivers' queue
(HyperKitty, a command, mail-archive.com through the outbox).

A failed hand-off waits :attr:`Backoff.first`, doubling up to :attr:`Backoff.most`; a
temporary failure is tried again until the row is :attr:`Backoff.give_up_after` old, a
permanent one (or a too old one) marks the row failed and keeps it with its last error.
The outbox takes its three figures from ``[outbox]`` (``backoff_first``, ``backoff_max``,
``retry_period``), whose defaults are :data:`DEFAULT`'s; the news and archivers' queues use
:data:`DEFAULT`.  Where the queues differ, they differ in what a row is, not in when it is
tried again: an outbox row is a copy with many recipients, delivered in chunks and
claimed under a lease (:mod:`mtaplugin.outbox.store`); a news or archiver row is one
article or one post for one server, handed over whole (:mod:`mtaplugin.outbox.handoff`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol


@dataclass(frozen=True)
class Backoff:
    """When a row that failed is tried again, and when it is given up."""

    first: timedelta = timedelta(minutes=1)
    most: timedelta = timedelta(hours=1)
    give_up_after: timedelta = timedelta(days=5)

    def wait(self, attempts: int) -> timedelta:
        """The wait after the ``attempts``-th failed try (1, 2, ...; 0 counts as 1)."""
        wait: timedelta = self.first * (2 ** min(max(attempts - 1, 0), 40))
        return min(wait, self.most)

    def expired(self, queued_at: datetime, now: datetime) -> bool:
        """A row queued at ``queued_at`` has waited too long at ``now``."""
        return now - queued_at >= self.give_up_after


#: the policy of the news and archivers' queues, and the outbox's defaults
DEFAULT = Backoff()
BACKOFF_FIRST = DEFAULT.first
BACKOFF_MAX = DEFAULT.most
GIVE_UP_AFTER = DEFAULT.give_up_after


class HandOffFailed(Exception):
    """The other server did not take a row: ``temporary`` (down, busy: try again later)
    or refused for good.  Each queue raises its own kind (``NewsError``,
    ``HandOffError``)."""

    def __init__(self, message: str, *, temporary: bool) -> None:
        super().__init__(message)
        self.temporary = temporary


class QueuedRow(Protocol):
    """A queue row the policy updates (news_queue, archiver_queue)."""

    attempts: int
    last_error: str
    failed: bool
    queued_at: datetime
    next_attempt_at: datetime


def backoff(attempts: int) -> timedelta:
    """The wait after the ``attempts``-th failed try, by :data:`DEFAULT`."""
    return DEFAULT.wait(attempts)


def failed_try(
    row: QueuedRow, error: str, temporary: bool, now: datetime, policy: Backoff = DEFAULT
) -> bool:
    """Count one failed try of ``row``; True when it is given up (marked failed), else its
    next attempt is set."""
    row.attempts += 1
    row.last_error = error
    if not temporary or policy.expired(row.queued_at, now):
        row.failed = True
        return True
    row.next_attempt_at = now + policy.wait(row.attempts)
    return False
