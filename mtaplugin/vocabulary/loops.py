"""The shape of the worker's threads that work off a table in batches (the accepted posts'
journal, the held posts' notices): a batch, another at once while rows wait, else a pause;
a database that cannot answer is a warning and a longer pause, any other error is logged
with its traceback and the loop goes on after the same pause."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mtaplugin.errors import TryLater

log = logging.getLogger(__name__)

#: on SQLite, the pause between two batches while rows wait: the decisions waiting for
#: the one write lock get it (SQLite's busy handler sleeps up to 100 ms between tries, so
#: a loop that took the lock again at once could keep them waiting)
SQLITE_YIELD_SECONDS = 0.1


def between_batches(dialect_name: str) -> float:
    """The pause between two batches while rows wait, on the database ``dialect_name``:
    :data:`SQLITE_YIELD_SECONDS` on SQLite (one writer), none elsewhere."""
    return SQLITE_YIELD_SECONDS if dialect_name == "sqlite" else 0.0


def keep_running(
    batch: Callable[[], bool],
    what: str,
    stop: threading.Event,
    *,
    poll: float,
    retry: float,
    between: float = 0.0,
) -> None:
    """Run ``batch`` until ``stop`` is set.  ``batch`` says whether rows still wait: then it
    runs again after ``between`` seconds (on SQLite, the decisions' turn for the write
    lock), else after ``poll``; after a failure, after ``retry``.  ``what`` names the loop
    in the log."""
    while not stop.is_set():
        try:
            more = batch()
        except TryLater as exc:
            log.warning("%s: %s; trying again in %.0f s", what, exc, retry)
            stop.wait(retry)
            continue
        except Exception:
            log.exception("%s: internal error; trying again in %.0f s", what, retry)
            stop.wait(retry)
            continue
        stop.wait(between if more else poll)
