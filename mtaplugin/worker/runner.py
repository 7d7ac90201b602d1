"""Run the jobs that are due, once per period across every host on the database.

``mtaplugin worker`` (and so ``mtaplugin serve``) calls :meth:`Runner.run_due` every few
seconds; ``mtaplugin jobs run NAME`` calls :meth:`Runner.run_now`.  A job is taken with a
lease (:mod:`mtaplugin.scheduler.runs`), which a thread moves on while the job runs, so
that a long run keeps it and a killed one lets it go when the lease runs out.  A job that
raises is logged and its error stored; the other jobs go on.  A database that cannot be
reached (:class:`~mtaplugin.errors.TryLater`) is a warning: the job is run again later.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from mtaplugin.errors import InvalidInput, NotFound, TryLater
from mtaplugin.i18n import _
from mtaplugin.scheduler.runs import Claim, Runs, new_holder
from mtaplugin.vocabulary.job import Job, JobContext
from mtaplugin.wiring import World

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """How one run went: the job's count, or the error it raised."""

    name: str
    result: int | None = None
    error: str = ""


class JobBusy(InvalidInput):
    """``jobs run NAME`` while another runner holds the job."""


class Runner:
    """The jobs of one process, run in its world."""

    def __init__(self, world: World, jobs: Sequence[Job[World]], runs: Runs | None = None) -> None:
        names = [j.name for j in jobs]
        if len(set(names)) != len(names):
            raise ValueError(f"two jobs have the same name: {names}")
        self.world = world
        self.jobs = {j.name: j for j in jobs}
        self.runs = runs or Runs(world.sessions, world.clock)
        self.holder = new_holder()
        self._known = False

    def job(self, name: str) -> Job[World]:
        found = self.jobs.get(name)
        if found is None:
            raise NotFound(
                "job",
                _("no job named {name!r}; the jobs are: {names}").format(
                    name=name, names=", ".join(sorted(self.jobs))
                ),
            )
        return found

    def _ensure(self) -> None:
        if not self._known:
            self.runs.ensure(self.jobs)
            self._known = True

    def run_due(self, should_stop: Callable[[], bool] = lambda: False) -> list[Outcome]:
        """Run every job that is due and that no other runner holds; what each did.
        ``should_stop`` is asked before each job (a worker told to stop starts no more)."""
        try:
            self._ensure()
            due = self.runs.due(self.jobs)
        except TryLater as exc:
            log.warning("scheduler: %s", exc)
            return []
        done = []
        for name in sorted(due):
            if should_stop():
                break
            try:
                claim = self.runs.claim(name, self.holder)
            except TryLater as exc:
                log.warning("scheduler: %s: %s", name, exc)
                continue
            if claim is not None:  # else another host took it first
                done.append(self._run(self.jobs[name], claim, force=False))
        return done

    def run_now(self, name: str) -> Outcome:
        """Run job ``name`` now, due or not, with its lease: :class:`JobBusy` when another
        runner holds it."""
        job = self.job(name)
        self._ensure()
        claim = self.runs.claim(name, self.holder, force=True)
        if claim is None:
            held = self.runs.all().get(name)
            raise JobBusy(
                "job",
                _("{name} is running on {holder} (its lease runs until {until})").format(
                    name=name,
                    holder=held.lease_holder if held else "?",
                    until=held.lease_until.isoformat(timespec="seconds")
                    if held and held.lease_until
                    else "?",
                ),
            )
        return self._run(job, claim, force=True)

    def _run(self, job: Job[World], claim: Claim, *, force: bool) -> Outcome:
        log.info("scheduler: %s started", job.name)
        try:
            with self._keeping(claim):
                result = int(job.run(JobContext(self.world, claim.now)))
        except TryLater as exc:
            log.warning("scheduler: %s: %s", job.name, exc)
            return self._failed(job, claim, str(exc))
        except Exception as exc:
            log.exception("scheduler: %s failed", job.name)
            return self._failed(job, claim, f"{type(exc).__name__}: {exc}")
        try:
            if not self.runs.finish(claim, job.every, result, force=force):
                log.warning("scheduler: %s: the lease was lost before the run ended", job.name)
        except TryLater as exc:
            # The lease runs out and the job runs again: jobs are written to be re-run.
            log.warning("scheduler: %s finished but could not be recorded: %s", job.name, exc)
        log.info("scheduler: %s done: %d", job.name, result)
        return Outcome(job.name, result=result)

    def _failed(self, job: Job[World], claim: Claim, error: str) -> Outcome:
        try:
            self.runs.fail(claim, job.every, error)
        except TryLater as exc:
            log.warning("scheduler: %s: the failure could not be recorded: %s", job.name, exc)
        return Outcome(job.name, error=error)

    @contextmanager
    def _keeping(self, claim: Claim) -> Iterator[None]:
        """Renew the lease from a thread while the job runs (every third of the lease)."""
        stop = threading.Event()
        interval = self.runs.lease.total_seconds() / 3

        def renew() -> None:
            while not stop.wait(interval):
                try:
                    if not self.runs.renew(claim):
                        log.warning("scheduler: %s: lease lost", claim.name)
                        return
                except TryLater as exc:
                    log.warning("scheduler: %s: lease not renewed: %s", claim.name, exc)

        thread = threading.Thread(target=renew, name=f"lease:{claim.name}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
