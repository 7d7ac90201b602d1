"""``mtaplugin worker``: the scheduler that replaces cron (outbox now; digests, bounce
scores and expiries as they are built)."""

from __future__ import annotations

import logging
import signal
import threading
import time
from types import FrameType

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import outbox
from mtaplugin.clock import Clock
from mtaplugin.db import session_scope
from mtaplugin.errors import TryLater
from mtaplugin.manage import pending
from mtaplugin.wiring import World, outbox_delivery

log = logging.getLogger(__name__)

TICK_SECONDS = 1.0
#: pending requests are expired this often (seconds)
EXPIRE_SECONDS = 60.0


def expire_pending(sessions: sessionmaker[Session], clock: Clock) -> int:
    with session_scope(sessions) as session:
        return pending.expire(session, clock())


def run(world: World, once: bool = False, *, delivery: outbox.Delivery | None = None) -> None:
    """Run the worker until SIGTERM (one round with ``once``) with the parts of its world;
    ``delivery``: another outbox delivery (a test's, over a fake transport)."""
    settings, sessions = world.settings, world.sessions
    if delivery is None:
        delivery = outbox_delivery(world)
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info("worker started")
    last_expiry = -EXPIRE_SECONDS
    while not stop.is_set():
        busy = False
        try:
            # A SIGTERM is seen between two SMTP transactions: the pass commits where it
            # is and gives its rows back, so that the next worker need not wait for the
            # lease to run out.  (A SIGKILL leaves the lease; see mtaplugin.outbox.deliver.)
            result = delivery.run(should_stop=stop.is_set)
            # A full batch: there may be more due at once, so no pause.
            busy = result.claimed >= settings.outbox.batch_size
            if time.monotonic() - last_expiry >= EXPIRE_SECONDS:
                expire_pending(sessions, world.clock)
                last_expiry = time.monotonic()
        except TryLater as exc:
            log.warning("worker: %s", exc)
        if once:
            break
        if not busy:
            stop.wait(TICK_SECONDS)
    log.info("worker stopped")
