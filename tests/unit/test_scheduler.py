"""mtaplugin.worker.runner and .runs: a job runs once per period across runners, on
SQLite and PostgreSQL; a runner killed mid-run leaves a lease that runs out; a job that
raises is recorded and the others go on; ``run_now`` takes the lease too.  Time is a
ManualClock: nothing sleeps for a period.  Every test names its jobs uniquely (the
``job_runs`` table is shared by the tests of the module)."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import wiring
from mtaplugin.clock import ManualClock, system_clock
from mtaplugin.config import Settings
from mtaplugin.db import engine_of
from mtaplugin.errors import DatabaseUnavailable, NotFound
from mtaplugin.model import JobRun
from mtaplugin.scheduler.runs import LEASE, RETRY_AFTER, Runs, next_due
from mtaplugin.vocabulary.job import Job, JobContext
from mtaplugin.worker.runner import JobBusy, Runner
from tests.helpers import unique

DAY = timedelta(days=1)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(system_clock().replace(microsecond=0))


@pytest.fixture
def world(module_sessions: sessionmaker[Session], clock: ManualClock) -> Iterator[wiring.World]:
    yield wiring.build(Settings(), db=engine_of(module_sessions), clock=clock)


class Tally:
    """Jobs that count their runs (thread-safe) and remember the time each run was for."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.times: list[object] = []
        self.lock = threading.Lock()

    def job(
        self,
        every: timedelta = DAY,
        then: Callable[[JobContext], None] | None = None,
        name: str = "",
    ) -> Job:
        name = name or unique("job-")

        def run(ctx: JobContext) -> int:
            with self.lock:
                self.runs[name] += 1
                self.times.append(ctx.now)
            if then is not None:
                then(ctx)
            return 7

        return Job(name, every, run, "counts its runs")


def row(sessions: sessionmaker[Session], name: str) -> JobRun:
    with sessions() as s:
        found = s.get(JobRun, name)
        assert found is not None
        return found


def test_a_job_runs_at_once_then_once_per_period(world: wiring.World, clock: ManualClock) -> None:
    tally = Tally()
    job = tally.job(every=DAY)
    runner = Runner(world, [job])
    start = clock()
    assert [o.result for o in runner.run_due()] == [7]
    assert runner.run_due() == []
    clock.advance(hours=23, minutes=59)
    assert runner.run_due() == []
    clock.advance(minutes=1, seconds=3)  # the tick comes a little after the due time
    assert [o.name for o in runner.run_due()] == [job.name]
    assert tally.runs[job.name] == 2
    r = row(world.sessions, job.name)
    # The next run stays at the job's hour: two periods after the first, not after the tick.
    assert r.due_at == start + 2 * DAY
    assert (r.last_result, r.last_error, r.lease_holder, r.lease_until) == (7, "", None, None)
    assert r.last_started_at == r.last_finished_at == clock()


def test_after_a_long_stop_a_job_runs_once_not_once_per_missed_period(
    world: wiring.World, clock: ManualClock
) -> None:
    tally = Tally()
    job = tally.job(every=timedelta(hours=1))
    runner = Runner(world, [job])
    runner.run_due()
    clock.advance(days=3)
    runner.run_due()
    assert runner.run_due() == []
    assert tally.runs[job.name] == 2
    assert row(world.sessions, job.name).due_at == clock() + timedelta(hours=1)


def test_next_due() -> None:
    t = system_clock()
    assert next_due(t, DAY, t + timedelta(seconds=4)) == t + DAY
    assert next_due(t, DAY, t + 2 * DAY) == t + 3 * DAY


@pytest.mark.parametrize("rounds", [3])
def test_two_runners_racing_run_each_job_once_per_period(
    world: wiring.World, clock: ManualClock, rounds: int
) -> None:
    tally = Tally()
    # Each run takes a moment, so that the other runner tries while it holds the job.
    jobs = [tally.job(then=lambda _ctx: time.sleep(0.02)) for _ in range(6)]
    runners = [Runner(world, jobs), Runner(world, jobs)]
    assert runners[0].holder != runners[1].holder
    done: Counter[int] = Counter()
    errors: list[BaseException] = []

    def race(n: int, barrier: threading.Barrier) -> None:
        try:
            barrier.wait()
            for _ in range(3):
                done[n] += len(runners[n].run_due())
        except BaseException as exc:
            errors.append(exc)

    for _ in range(rounds):
        barrier = threading.Barrier(2)
        threads = [threading.Thread(target=race, args=(n, barrier)) for n in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        clock.advance(DAY)
    assert tally.runs == Counter({j.name: rounds for j in jobs})
    assert done[0] + done[1] == rounds * len(jobs)


def test_two_runners_claiming_at_once_never_both_get_the_lease(world: wiring.World) -> None:
    """The claim itself, hammered: 20 jobs, two threads claiming each at the same moment."""
    names = [unique("claim-") for _ in range(20)]
    runs = Runs(world.sessions, world.clock)
    runs.ensure(names)
    won: dict[str, list[str]] = {n: [] for n in names}
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def claimer(holder: str) -> None:
        try:
            barrier.wait()
            for name in names:
                if runs.claim(name, holder) is not None:
                    won[name].append(holder)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(h,)) for h in ("host-a", "host-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert all(len(holders) == 1 for holders in won.values())


def test_a_runner_killed_mid_run_leaves_a_lease_that_runs_out(
    world: wiring.World, clock: ManualClock
) -> None:
    tally = Tally()
    job = tally.job(every=DAY)
    dead, alive = Runner(world, [job]), Runner(world, [job])
    dead.runs.ensure([job.name])
    # kill -9 between the claim and the end of the run: the lease stays, nothing finishes.
    killed = dead.runs.claim(job.name, dead.holder)
    assert killed is not None
    assert alive.run_due() == []
    with pytest.raises(JobBusy, match=dead.holder):
        alive.run_now(job.name)
    clock.advance(LEASE - timedelta(seconds=1))
    assert alive.run_due() == []
    clock.advance(seconds=2)
    assert [o.name for o in alive.run_due()] == [job.name]
    assert tally.runs[job.name] == 1
    r = row(world.sessions, job.name)
    assert r.lease_holder is None and r.last_result == 7
    # Had the "dead" runner only stalled, its late word would not be taken.
    assert not dead.runs.finish(killed, DAY, 1)
    assert row(world.sessions, job.name).last_result == 7


def test_a_lost_lease_is_not_written_over(world: wiring.World, clock: ManualClock) -> None:
    runs = Runs(world.sessions, world.clock)
    name = unique("lost-")
    runs.ensure([name])
    first = runs.claim(name, "host-a")
    assert first is not None
    clock.advance(LEASE + timedelta(seconds=1))
    second = runs.claim(name, "host-b")
    assert second is not None
    assert not runs.finish(first, DAY, 1)  # host-a's lease ran out: host-b holds it now
    assert row(world.sessions, name).lease_holder == "host-b"
    assert runs.finish(second, DAY, 2)
    assert row(world.sessions, name).last_result == 2


def test_the_lease_is_renewed_while_a_long_job_runs(
    world: wiring.World, clock: ManualClock
) -> None:
    lease = timedelta(seconds=0.3)  # renewed every 0.1 s of real time
    seen: list[object] = []
    name = unique("long-")
    other = Runs(world.sessions, world.clock, lease=lease)

    def long_run(ctx: JobContext) -> None:
        clock.advance(seconds=0.25)
        time.sleep(0.6)  # the lease is renewed from clock() meanwhile
        clock.advance(seconds=0.25)  # past the first lease: still held
        seen.append(other.claim(name, "host-b", force=True))

    job = Tally().job(then=long_run, name=name)
    runner = Runner(world, [job], Runs(world.sessions, world.clock, lease=lease))
    assert [o.result for o in runner.run_due()] == [7]
    assert seen == [None]


def test_a_job_that_raises_is_recorded_and_the_others_go_on(
    world: wiring.World, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    tally = Tally()

    def broken(ctx: JobContext) -> int:
        raise RuntimeError("the disk is on fire")

    bad = Job(unique("broken-"), DAY, broken, "raises")
    good = tally.job()
    runner = Runner(world, [bad, good])
    with caplog.at_level(logging.ERROR, logger="mtaplugin.worker.runner"):
        outcomes = {o.name: o for o in runner.run_due()}
    assert outcomes[bad.name].error == "RuntimeError: the disk is on fire"
    assert outcomes[good.name].result == 7
    assert "the disk is on fire" in caplog.text
    r = row(world.sessions, bad.name)
    assert (r.last_error, r.lease_holder) == ("RuntimeError: the disk is on fire", None)
    assert r.due_at == clock() + RETRY_AFTER
    clock.advance(RETRY_AFTER)
    assert [o.name for o in runner.run_due()] == [bad.name]


def test_a_database_outage_in_a_job_is_a_warning(
    world: wiring.World, caplog: pytest.LogCaptureFixture
) -> None:
    def down(ctx: JobContext) -> int:
        raise DatabaseUnavailable("the list database cannot be reached: refused")

    job = Job(unique("down-"), DAY, down, "try later")
    with caplog.at_level(logging.WARNING, logger="mtaplugin.worker.runner"):
        (outcome,) = Runner(world, [job]).run_due()
    assert "cannot be reached" in outcome.error
    assert [r.levelname for r in caplog.records if job.name in r.getMessage()] == ["WARNING"]
    assert "cannot be reached" in row(world.sessions, job.name).last_error


def test_run_now_runs_a_job_that_is_not_due_and_moves_its_next_run(
    world: wiring.World, clock: ManualClock
) -> None:
    tally = Tally()
    job = tally.job(every=DAY)
    runner = Runner(world, [job])
    runner.run_due()
    clock.advance(hours=5)
    assert runner.run_now(job.name).result == 7
    assert tally.runs[job.name] == 2
    assert row(world.sessions, job.name).due_at == clock() + DAY
    with pytest.raises(NotFound, match="no job named 'nope'"):
        runner.run_now("nope")


def test_two_jobs_of_one_name_are_refused(world: wiring.World) -> None:
    job = Tally().job()
    with pytest.raises(ValueError, match="same name"):
        Runner(world, [job, job])


_KILLED_RUNNER = """
import sys, time
from datetime import timedelta
from mtaplugin import wiring
from mtaplugin.config import Settings, DatabaseSettings
from mtaplugin.vocabulary.job import Job
from mtaplugin.worker.runner import Runner

def forever(ctx):
    print("started", flush=True)
    time.sleep(600)
    return 1

world = wiring.build(Settings(database=DatabaseSettings(url=sys.argv[1])))
Runner(world, [Job(sys.argv[2], timedelta(days=1), forever, "never ends")]).run_due()
"""


def test_a_job_whose_runner_got_kill_9_runs_again_when_the_lease_ran_out(
    world: wiring.World, module_db_url: str, clock: ManualClock
) -> None:
    """A real process, killed with SIGKILL in the middle of the job."""
    name = unique("kill9-")
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_RUNNER, module_db_url, name],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "started"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    left = row(world.sessions, name)
    assert left.lease_holder is not None and str(child.pid) in left.lease_holder
    assert left.lease_until is not None and left.last_finished_at is None
    tally = Tally()
    job = tally.job(name=name)
    runner = Runner(world, [job])
    assert runner.run_due() == []  # the dead runner's lease still runs
    clock.now = left.lease_until + timedelta(seconds=1)
    assert [o.result for o in runner.run_due()] == [7]
    assert tally.runs[name] == 1


def test_a_runner_told_to_stop_starts_no_more_jobs(world: wiring.World) -> None:
    tally = Tally()
    stop = threading.Event()
    first = tally.job(name=unique("a-first-"), then=lambda _ctx: stop.set())
    second = tally.job(name=unique("b-second-"))
    outcomes = Runner(world, [first, second]).run_due(should_stop=stop.is_set)
    assert [o.name for o in outcomes] == [first.name]
    assert row(world.sessions, second.name).last_started_at is None  # still due
