"""``mtaplugin jobs list|run`` and ``mtaplugin worker --once`` running the due jobs, on
SQLite and PostgreSQL, in-process through ``main(argv)``."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import system_clock
from mtaplugin.manage import lists
from mtaplugin.model import HeldMessage, JobRun
from mtaplugin.worker.registry import JOBS
from tests.unit.cli.conftest import Run


@pytest.fixture
def signals() -> Iterator[None]:
    """The worker sets SIGTERM and SIGINT handlers: put pytest's back afterwards."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def job_rows(db: sessionmaker[Session]) -> dict[str, JobRun]:
    with db() as s:
        return {r.name: r for r in s.scalars(select(JobRun))}


def test_jobs_list_shows_every_job_before_and_after_a_run(
    run: Run, db: sessionmaker[Session]
) -> None:
    before = run("jobs", "list")
    assert before.code == 0, before.err
    lines = before.out.splitlines()
    assert lines[0].split("\t") == ["NAME", "EVERY", "LAST RUN", "RESULT", "NEXT DUE", "LEASE"]
    rows = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    assert list(rows) == [j.name for j in JOBS]
    assert rows["pending-reminders"][1:] == ["1d", "-", "-", "now", "-"]
    assert rows["pending-expiry"][1] == "1h"
    done = run("jobs", "run", "housekeeping")
    assert done.code == 0, done.err
    assert done.out.strip() == "housekeeping done: 0"
    after = {line.split("\t")[0]: line.split("\t") for line in run("jobs", "list").out.splitlines()}
    _name, every, last, result, due, lease = after["housekeeping"]
    assert (every, result, lease) == ("1d", "0", "-")
    assert last != "-" and due not in {"-", "now"}
    documented = run("jobs", "list", "--docs").out
    assert "[retention]" in documented


def test_jobs_run_of_an_unknown_job_names_it_and_exits_2(
    run: Run, db: sessionmaker[Session]
) -> None:
    result = run("jobs", "run", "cleanup")
    assert result.code == 2
    assert "no job named 'cleanup'" in result.err
    assert "housekeeping" in result.err  # the names to choose from
    assert job_rows(db) == {}  # nothing was run or recorded


def test_jobs_run_refuses_a_job_another_host_holds(run: Run, db: sessionmaker[Session]) -> None:
    assert run("jobs", "run", "hold-expiry").code == 0
    with db.begin() as s:
        row = s.get(JobRun, "hold-expiry")
        assert row is not None
        row.lease_holder = "other-host:42:abc"
        row.lease_until = system_clock() + timedelta(minutes=5)
    result = run("jobs", "run", "hold-expiry")
    assert result.code == 1
    assert "hold-expiry is running on other-host:42:abc" in result.err
    assert "other-host:42:abc until" in run("jobs", "list").out


def test_worker_once_runs_the_due_jobs(
    run: Run, db: sessionmaker[Session], team: str, signals: None
) -> None:
    with db.begin() as s:
        mlist = lists.get(s, team)
        mlist.max_days_to_hold = 1
        s.add(
            HeldMessage(
                mailing_list_id=mlist.id,
                sender="stranger@example.net",
                raw=b"Subject: x\r\n\r\nx\r\n",
                hold_date=system_clock() - timedelta(days=2),
            )
        )
    assert run("worker", "--once").code == 0
    rows = job_rows(db)
    assert set(rows) == {j.name for j in JOBS}
    for r in rows.values():
        assert r.last_finished_at is not None and r.last_error == "", r.name
        assert r.lease_holder is None
        assert r.due_at > system_clock()
    assert rows["hold-expiry"].last_result == 1
    with db() as s:
        assert s.scalars(select(HeldMessage)).all() == []
