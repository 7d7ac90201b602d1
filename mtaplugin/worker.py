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
from mtaplugin.clock import Clock, system_clock
from mtaplugin.config import Settings
from mtaplugin.db import make_engine, session_scope, sessionmaker_for
from mtaplugin.errors import TryLater
from mtaplugin.mailauth.service import Deliverability
from mtaplugin.manage import pending

log = logging.getLogger(__name__)

TICK_SECONDS = 1.0
#: pending requests are expired this often (seconds)
EXPIRE_SECONDS = 60.0


def expire_pending(sessions: sessionmaker[Session], clock: Clock = system_clock) -> int:
    with session_scope(sessions) as session:
        return pending.expire(session, clock())


def outbox_delivery(
    settings: Settings,
    sessions: sessionmaker[Session],
    *,
    transport: outbox.Transport | None = None,
    sealer: outbox.Sealer | None = None,
    clock: Clock = system_clock,
) -> outbox.Delivery:
    """The outbox's delivery, given its world: the SMTP transport to the re-injection
    listener and the site's sealer unless others are given.  (A small constructor until
    the one composition root, ``wiring.build``, passes these parts.)"""
    return outbox.Delivery(
        sessions,
        settings.outbound,
        transport=transport or outbox.SmtpTransport.from_settings(settings.outbound),
        sealer=sealer if sealer is not None else Deliverability.from_settings(settings),
        clock=clock,
        secret_key=settings.site.secret_key,
    )


def run(
    settings: Settings,
    once: bool = False,
    *,
    sessions: sessionmaker[Session] | None = None,
    delivery: outbox.Delivery | None = None,
) -> None:
    """Run the worker until SIGTERM (one round with ``once``), with the parts it is given
    (built from ``settings`` when not)."""
    if sessions is None:
        sessions = sessionmaker_for(make_engine(settings.database.url, settings.database.timeout))
    if delivery is None:
        delivery = outbox_delivery(settings, sessions)
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
            busy = result.claimed >= settings.outbound.batch_size
            if time.monotonic() - last_expiry >= EXPIRE_SECONDS:
                expire_pending(sessions)
                last_expiry = time.monotonic()
        except TryLater as exc:
            log.warning("worker: %s", exc)
        if once:
            break
        if not busy:
            stop.wait(TICK_SECONDS)
    log.info("worker stopped")
