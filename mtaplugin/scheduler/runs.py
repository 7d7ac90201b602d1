"""The ``job_runs`` table: when each job is due, who holds it, how its last run went.

Every statement that takes or gives back a job is one atomic ``UPDATE`` whose ``WHERE``
says when it may apply, so that runners on several mail hosts sharing one database never
both hold a job:

- :meth:`Runs.claim` matches only while the job is due (``force``: at any time) and no
  lease is running; on PostgreSQL a second runner's ``UPDATE`` of the same row waits for
  the first to commit and then finds the lease taken, on SQLite the one write lock puts
  them one after the other;
- :meth:`Runs.renew`, :meth:`Runs.finish` and :meth:`Runs.fail` match only while this
  runner still holds the lease.

A runner killed with kill -9 leaves its lease; once ``lease_until`` has passed another
runner takes the job and runs it again (jobs are written to be re-run).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import Clock, system_clock
from mtaplugin.db import session_scope, upsert_insert
from mtaplugin.model import JobRun

R = JobRun.__table__.c

#: how long a runner holds a job before another may take it; renewed while the job runs
LEASE = timedelta(minutes=10)
#: a run that failed is tried again after this long (or its period, if shorter)
RETRY_AFTER = timedelta(minutes=10)
#: the longest error text kept
MAX_ERROR = 2000


def new_holder() -> str:
    """A name for one runner: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"[-128:]


@dataclass(frozen=True)
class Claim:
    """A job this runner holds: its name and the time the run is for."""

    name: str
    holder: str
    now: datetime
    #: when it was due (the next due time is counted from it)
    due_at: datetime


def next_due(due_at: datetime, every: timedelta, now: datetime) -> datetime:
    """The next due time after a run that was due at ``due_at`` and ran at ``now``: one
    period on, so that a daily job stays at its hour; a period from now when the runners
    were stopped for longer than a period (no catching up run after run)."""
    following = due_at + every
    return following if following > now else now + every


class Runs:
    """The job rows of one database, on one clock."""

    def __init__(
        self, sessions: sessionmaker[Session], clock: Clock = system_clock, lease: timedelta = LEASE
    ) -> None:
        self.sessions = sessions
        self.clock = clock
        self.lease = lease

    def now(self, session: Session) -> datetime:
        """The time every host agrees on: the database server's on PostgreSQL (the hosts'
        clocks may differ), else the clock's (a test's ManualClock)."""
        if self.clock is system_clock and session.get_bind().dialect.name == "postgresql":
            found = session.scalar(select(func.now()))
            assert isinstance(found, datetime)
            return found
        return self.clock()

    def ensure(self, names: Iterable[str]) -> None:
        """A row for every job that has none yet, due at once."""
        wanted = list(names)
        if not wanted:
            return
        with session_scope(self.sessions) as session:
            now = self.now(session)
            rows = [{"name": n, "due_at": now, "last_error": ""} for n in wanted]
            insert = upsert_insert(session.get_bind().dialect.name)
            session.execute(insert(JobRun).values(rows).on_conflict_do_nothing())

    def due(self, names: Iterable[str]) -> list[str]:
        """The jobs among ``names`` that are due and that nobody holds (a read, to spare
        an ``UPDATE`` per job on every tick; :meth:`claim` decides)."""
        with session_scope(self.sessions) as session:
            now = self.now(session)
            return list(
                session.scalars(
                    select(R.name).where(
                        R.name.in_(list(names)),
                        R.due_at <= now,
                        or_(R.lease_until.is_(None), R.lease_until < now),
                    )
                )
            )

    def claim(self, name: str, holder: str, *, force: bool = False) -> Claim | None:
        """Take the lease on job ``name`` if it is due (``force``: even if not) and nobody
        holds it; None when another runner has it or it is not due."""
        with session_scope(self.sessions) as session:
            now = self.now(session)
            when = [R.name == name, or_(R.lease_until.is_(None), R.lease_until < now)]
            if not force:
                when.append(R.due_at <= now)
            found = session.execute(
                update(JobRun)
                .where(*when)
                .values(lease_holder=holder, lease_until=now + self.lease, last_started_at=now)
                .returning(R.due_at)
            ).first()
        if found is None:
            return None
        return Claim(name, holder, now, found.due_at)

    def renew(self, claim: Claim) -> bool:
        """Move the lease on while the job runs; False: this runner lost it."""
        with session_scope(self.sessions) as session:
            result = session.execute(
                update(JobRun)
                .where(R.name == claim.name, R.lease_holder == claim.holder)
                .values(lease_until=self.now(session) + self.lease)
            )
            return int(getattr(result, "rowcount", 0) or 0) == 1

    def finish(self, claim: Claim, every: timedelta, result: int, *, force: bool = False) -> bool:
        """Record a run that finished and give the lease back; the job is due a period on
        (after a forced run: a period from now).  False: this runner had lost the lease."""
        with session_scope(self.sessions) as session:
            now = self.now(session)
            due = now + every if force else next_due(claim.due_at, every, claim.now)
            return self._release(
                session, claim, due_at=due, last_finished_at=now, last_result=result
            )

    def fail(self, claim: Claim, every: timedelta, error: str) -> bool:
        """Record a run that failed and give the lease back; it is tried again after
        :data:`RETRY_AFTER` (or its period, if shorter)."""
        with session_scope(self.sessions) as session:
            now = self.now(session)
            return self._release(
                session,
                claim,
                due_at=now + min(every, RETRY_AFTER),
                last_finished_at=now,
                last_error=error[:MAX_ERROR] or "error",
            )

    def _release(self, session: Session, claim: Claim, **values: object) -> bool:
        values.setdefault("last_error", "")
        result = session.execute(
            update(JobRun)
            .where(R.name == claim.name, R.lease_holder == claim.holder)
            .values(lease_holder=None, lease_until=None, **values)
        )
        return int(getattr(result, "rowcount", 0) or 0) == 1

    def all(self) -> dict[str, JobRun]:
        with session_scope(self.sessions) as session:
            rows = list(session.scalars(select(JobRun)))
            session.expunge_all()
        return {r.name: r for r in rows}
