"""``mtaplugin worker``: the accepted posts' fan-out, the outbox's deliveries and the
scheduler that replaces cron.

The journal of accepted posts (:mod:`mtaplugin.accepted`) is drained in a thread of its
own, about every quarter of a second (at once while posts wait), so that the archive, the
digest, the external archivers and the news gateway have a post a moment after its 250,
whatever the outbox or the jobs are doing.  Another thread makes the notices of the posts
held since (:mod:`mtaplugin.manage.hold_notices`), as often.  Every tick (a second, or at
once after a full batch) it delivers what the outbox holds; about every
:data:`SCHEDULE_SECONDS` it runs the periodic jobs that are due (:mod:`mtaplugin.scheduler`:
pending-request expiry, moderator reminders, held-post expiry, housekeeping, bounces,
digests, ...), each once per period across every host on the database.  The jobs run in a
thread of their own, so that a long one (a bounce storm, the first housekeeping of a large
database, the daily digests of many lists) never holds up the outbox; with ``once`` they
run one round, one after the other (the journal and the hold notices first, so that what
they put in the outbox goes out in the same round).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from types import FrameType

from mtaplugin.accepted import drain
from mtaplugin.accepted.fanout import Outlets
from mtaplugin.errors import TryLater
from mtaplugin.manage import hold_notices
from mtaplugin.relay.deliver import Delivery
from mtaplugin.vocabulary.job import Job
from mtaplugin.wiring import World, outbox_delivery
from mtaplugin.worker.runner import Runner

log = logging.getLogger(__name__)

TICK_SECONDS = 1.0
#: how often the due jobs are looked for (seconds)
SCHEDULE_SECONDS = 5.0
#: how long a stopping worker waits for the job under way (seconds)
JOIN_SECONDS = 30.0


def run(
    world: World,
    once: bool = False,
    *,
    delivery: Delivery | None = None,
    jobs: Sequence[Job[World]] | None = None,
) -> None:
    """Run the worker until SIGTERM (one round with ``once``) with the parts of its world;
    ``delivery``: another outbox delivery (a test's, over a fake transport); ``jobs``:
    other periodic jobs than :data:`mtaplugin.worker.registry.JOBS`."""
    settings = world.settings
    if delivery is None:
        delivery = outbox_delivery(world)
    if jobs is None:
        from mtaplugin.worker.registry import JOBS

        jobs = JOBS
    scheduler = Runner(world, jobs)
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info("worker started")
    outlets = Outlets.of(settings)
    policy = hold_notices.NoticePolicy.of(settings, world.clock)
    threads: list[threading.Thread] = []
    if once:
        _drain_once(world, outlets, policy)
    else:
        threads = [
            _started("accepted", drain.keep_draining, world.sessions, outlets, stop),
            _started("hold-notices", hold_notices.keep_sending, world.sessions, policy, stop),
            _started("scheduler", _run_jobs, scheduler, stop),
        ]
    while not stop.is_set():
        busy = False
        try:
            # A SIGTERM is seen between two SMTP transactions: the pass commits where it
            # is and gives its rows back, so that the next worker need not wait for the
            # lease to run out.  (A SIGKILL leaves the lease; see mtaplugin.relay.deliver.)
            result = delivery.run(should_stop=stop.is_set)
            # A full batch: there may be more due at once, so no pause.
            busy = result.claimed >= settings.outbox.batch_size
        except TryLater as exc:
            log.warning("worker: %s", exc)
        if once:
            _run_jobs_once(scheduler, stop)
            break
        if not busy:
            stop.wait(TICK_SECONDS)
    # The job under way finishes (its lease is given back); one that takes longer than
    # this keeps its lease until it runs out, and runs again elsewhere.
    for thread in threads:
        thread.join(JOIN_SECONDS)
    log.info("worker stopped")


def _started(name: str, target: Callable[..., None], *args: object) -> threading.Thread:
    """One of the worker's threads, started (a daemon: a stop waits for it a while)."""
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread


def _drain_once(world: World, outlets: Outlets, policy: hold_notices.NoticePolicy) -> None:
    try:
        drain.drain_all(world.sessions, outlets)
    except TryLater as exc:
        log.warning("accepted posts: %s", exc)
    try:
        hold_notices.send_all(world.sessions, policy)
    except TryLater as exc:
        log.warning("hold notices: %s", exc)


def _run_jobs_once(scheduler: Runner, stop: threading.Event) -> None:
    try:
        # Each job's failure is logged and stored by the runner; the others go on.
        scheduler.run_due(should_stop=stop.is_set)
    except TryLater as exc:
        log.warning("scheduler: %s", exc)
    except Exception:
        log.exception("scheduler: internal error; trying again in %.0f s", SCHEDULE_SECONDS)


def _run_jobs(scheduler: Runner, stop: threading.Event) -> None:
    """The scheduler's thread: the due jobs, about every :data:`SCHEDULE_SECONDS`."""
    while not stop.is_set():
        _run_jobs_once(scheduler, stop)
        stop.wait(SCHEDULE_SECONDS)
