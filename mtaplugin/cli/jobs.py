"""``mtaplugin jobs list|run``: the scheduler's periodic jobs, when each last ran, and one
run now."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, leaf
from mtaplugin.i18n import _

if TYPE_CHECKING:
    from mtaplugin.model import JobRun
    from mtaplugin.vocabulary.job import Job
    from mtaplugin.wiring import World


def period(every: timedelta) -> str:
    """``1d``, ``6h``, ``15m``, ``30s``: a period as ``jobs list`` shows it."""
    seconds = int(every.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S") if at is not None else "-"


def columns(job: Job[World], r: JobRun | None, now: datetime) -> tuple[str, ...]:
    """What ``jobs list`` shows of one job: name, period, last run, result, next due,
    lease."""
    if r is None:  # never run on this database: due as soon as a worker runs
        return (job.name, period(job.every), "-", "-", _("now"), "-")
    if r.last_error:
        result = _("error: {error}").format(error=r.last_error.splitlines()[0])
    else:
        result = "-" if r.last_result is None else str(r.last_result)
    lease = (
        _("{holder} until {until}").format(holder=r.lease_holder, until=when(r.lease_until))
        if r.lease_holder and r.lease_until and r.lease_until > now
        else "-"
    )
    due = _("now") if r.due_at <= now else when(r.due_at)
    return (job.name, period(job.every), when(r.last_started_at), result, due, lease)


def cmd_jobs_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin import wiring
    from mtaplugin.scheduler.runs import Runs
    from mtaplugin.worker.registry import JOBS

    world = wiring.build(settings)
    rows = Runs(world.sessions, world.clock).all()
    now = world.clock()
    print("\t".join((_("NAME"), _("EVERY"), _("LAST RUN"), _("RESULT"), _("NEXT DUE"), _("LEASE"))))
    for job in JOBS:
        print("\t".join(columns(job, rows.get(job.name), now)))
        if args.verbose_docs:
            print(f"\t{job.doc}")
    return 0


def cmd_jobs_run(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin import wiring
    from mtaplugin.errors import NotFound
    from mtaplugin.worker.registry import JOBS
    from mtaplugin.worker.runner import Runner

    runner = Runner(wiring.build(settings), JOBS)
    try:
        runner.job(args.name)
    except NotFound as exc:
        print(_("mtaplugin: error: {error}").format(error=exc), file=sys.stderr)
        return 2
    outcome = runner.run_now(args.name)
    if outcome.error:
        print(
            _("{name} failed: {error}").format(name=outcome.name, error=outcome.error),
            file=sys.stderr,
        )
        return 1
    print(_("{name} done: {result}").format(name=outcome.name, result=outcome.result))
    return 0


def register(sub: Subparsers) -> None:
    jp = group(sub, "jobs", _("the scheduler's periodic jobs"))
    p = leaf(
        jp,
        "list",
        cmd_jobs_list,
        _("each job: name, period, last run, result, next due, lease"),
    )
    p.add_argument(
        "--docs", dest="verbose_docs", action="store_true", help=_("say what each job does")
    )
    p = leaf(jp, "run", cmd_jobs_run, _("run one job now, due or not (taking its lease)"))
    p.add_argument("name", metavar="NAME")
