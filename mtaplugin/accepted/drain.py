"""Draining the journal of accepted posts: the worker's part of the stage.

:func:`drain_batch` takes up to :data:`BATCH` rows, oldest first, and fans them out in
**one transaction**: each row is removed (``DELETE ... RETURNING``) and its outlets are
written in the same transaction, so a kill -9 anywhere in the batch leaves every row in
the journal and none of its effects, and the next drain does it all once.  Two drains at
once (two workers on one PostgreSQL) never do a row twice: each takes the rows the other
has not locked (``FOR UPDATE SKIP LOCKED``), and a row removed meanwhile (the ``DELETE``
removes nothing) is skipped.  A batch
stops taking rows after :data:`BUDGET` seconds of work and commits (on SQLite the batch
holds the one write lock, which the decisions wait for).

A post whose fan-out raises (a bug, not the database) is marked ``failed`` with the error,
logged, and kept; the posts after it go on.  A database that cannot be reached rolls the
batch back: it is drained again on the next try.

**Savepoints only when needed.**  A batch first runs without a savepoint per post (two
statements and the session's nested transaction, per post, saved).  When a post's fan-out
raises there (a bug, or :class:`~mtaplugin.accepted.fanout.Repeat`), the whole batch is
rolled back and run again at once, each post in its savepoint as above: so the result is
the same, and the usual batch pays for no savepoint.

:func:`keep_draining` is the worker's loop: a batch, then another at once while the
journal is not empty (on SQLite after
:data:`~mtaplugin.vocabulary.loops.SQLITE_YIELD_SECONDS`, the decisions' turn for the
write lock), else a pause of :data:`POLL_SECONDS`.  So a post is in the archive
about :data:`POLL_SECONDS` plus a batch's time after its 250 (docs/archive.md states the
bound).  :func:`drain_all` drains everything now (``mtaplugin worker --once``, tests).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.accepted.fanout import Contexts, Entry, Fanned, Kept, Outlets, Repeat, fan_out
from mtaplugin.accepted.journal import JOURNAL
from mtaplugin.db import engine_of, session_scope
from mtaplugin.errors import TryLater
from mtaplugin.vocabulary.loops import between_batches, keep_running

log = logging.getLogger(__name__)

#: rows one batch takes at most
BATCH = 100
#: seconds of work after which a batch takes no more rows and commits
BUDGET = 0.02
#: the pause when the journal is empty (seconds)
POLL_SECONDS = 0.25
#: the pause after the database failed (seconds)
RETRY_SECONDS = 1.0

C = JOURNAL.c
_DUE = select(C.id).where(C.failed.is_(False)).order_by(C.id)
# Built once (one per post): building a statement costs more than running it.
_TAKE = delete(JOURNAL).where(C.id == bindparam("pk"), C.failed.is_(False)).returning(*C)


@dataclass
class Drained:
    """What one batch (or :func:`drain_all`) did."""

    #: posts fanned out
    posts: int = 0
    #: of which repeats (the list's archive held their Message-ID already)
    repeats: int = 0
    #: posts whose fan-out failed (kept, marked failed)
    failed: int = 0
    #: rows of the batch left for the next one (the time budget ran out)
    left: int = 0

    def took(self, fanned: Fanned | None) -> None:
        """Count a post fanned out (None: its list is gone)."""
        if fanned is not None:
            self.posts += 1
            self.repeats += fanned.repeat

    def add(self, other: Drained) -> None:
        self.posts += other.posts
        self.repeats += other.repeats
        self.failed += other.failed
        self.left = other.left


def drain_batch(
    sessions: sessionmaker[Session],
    outlets: Outlets,
    *,
    limit: int = BATCH,
    budget: float = BUDGET,
    kept: Kept | None = None,
) -> Drained:
    """Fan out the oldest ``limit`` accepted posts (fewer when ``budget`` runs out), in
    one transaction; ``kept``: the lists' contexts a drain keeps across its batches."""
    kept = kept if kept is not None else Kept()
    try:
        return _drain_ids(sessions, outlets, limit, budget, kept, careful=False)
    except _Again:
        pass  # rolled back: nothing of the batch stays
    return _drain_ids(sessions, outlets, limit, budget, kept, careful=True)


def _drain_ids(
    sessions: sessionmaker[Session],
    outlets: Outlets,
    limit: int,
    budget: float,
    kept: Kept,
    *,
    careful: bool,
) -> Drained:
    done = Drained()
    with session_scope(sessions) as session:
        # PostgreSQL: the rows another drain holds are skipped (SQLite has one writer)
        ids = list(session.scalars(_DUE.limit(limit).with_for_update(skip_locked=True)))
        if not ids:
            return done
        contexts = Contexts(session, outlets, kept)
        conn = session.connection()  # (the session's one connection: asked for once)
        started = time.monotonic()
        for n, pk in enumerate(ids):
            if n and time.monotonic() - started > budget:
                done.left = len(ids) - n
                break
            _drain_one(session, conn, pk, contexts, done, careful)
    return done


class _Again(Exception):
    """A post's fan-out raised in a batch run without savepoints: the batch is rolled
    back and run again, each post in its savepoint."""


def _drain_one(
    session: Session, conn: Connection, pk: int, contexts: Contexts, done: Drained, careful: bool
) -> None:
    # The row is taken outside the savepoint: on SQLite the batch's first write must be a
    # plain statement (a transaction that a SAVEPOINT opened ends at its RELEASE).
    row = conn.execute(_TAKE, {"pk": pk}).one_or_none()
    if row is None:  # another drain took it
        return
    entry = Entry.of(row)
    if careful:
        _drain_carefully(session, row, entry, contexts, done)
        return
    try:
        fanned = _fanned(session, entry, contexts)
    except (OperationalError, TryLater):
        raise  # the database: the whole batch again, later
    except Exception as exc:  # a Repeat, or a bug: the batch again, in savepoints
        raise _Again from exc
    done.took(fanned)


def _drain_carefully(
    session: Session, row: Any, entry: Entry, contexts: Contexts, done: Drained
) -> None:
    """The post's fan-out in its savepoint: a repeat or a bug undoes it alone."""
    try:
        with session.begin_nested():
            fanned = _fanned(session, entry, contexts)
    except Repeat:  # archived by another drain at the same moment: nothing of it kept
        done.posts += 1
        done.repeats += 1
        return
    except (OperationalError, TryLater):
        raise  # the database: the whole batch again, later
    except Exception as exc:
        log.exception("accepted post %d: its fan-out failed; kept, marked failed", entry.id)
        session.execute(
            insert(JOURNAL).values({**row._mapping, "failed": True, "last_error": str(exc)[:2000]})
        )
        done.failed += 1
        return
    done.took(fanned)


def _fanned(session: Session, entry: Entry, contexts: Contexts) -> Fanned | None:
    mlist = contexts.mailing_list(entry.mailing_list_id)
    if mlist is None:  # pragma: no cover -- the list's rows go with it (cascade)
        return None
    return fan_out(session, mlist, entry, contexts)


def drain_all(sessions: sessionmaker[Session], outlets: Outlets) -> Drained:
    """Drain the journal until it is empty (failed rows stay)."""
    total = Drained()
    kept = Kept()
    while True:
        done = drain_batch(sessions, outlets, kept=kept)
        total.add(done)
        if not (done.posts or done.failed or done.left):
            return total


def keep_draining(sessions: sessionmaker[Session], outlets: Outlets, stop: threading.Event) -> None:
    """The worker's drain loop, until ``stop`` is set: a batch, another at once while posts
    wait (on SQLite after :data:`~mtaplugin.vocabulary.loops.SQLITE_YIELD_SECONDS`), else a pause of
    :data:`POLL_SECONDS`."""
    between = between_batches(engine_of(sessions).dialect.name)
    kept = Kept()

    def batch() -> bool:
        done = drain_batch(sessions, outlets, kept=kept)
        return bool(done.left or done.posts + done.failed >= BATCH)

    keep_running(
        batch, "accepted posts", stop, poll=POLL_SECONDS, retry=RETRY_SECONDS, between=between
    )
