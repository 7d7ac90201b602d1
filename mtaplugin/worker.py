"""``mtaplugin worker``: the scheduler that replaces cron (outbox now; digests, bounce
scores and expiries as they are built)."""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

from sqlalchemy import delete
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import outbound
from mtaplugin.config import Settings
from mtaplugin.db import make_engine, session_scope, sessionmaker_for
from mtaplugin.errors import TryLater
from mtaplugin.model import PendingRequest
from mtaplugin.model.base import utcnow

log = logging.getLogger(__name__)

TICK_SECONDS = 1.0


def expire_pending(sessions: sessionmaker[Session]) -> int:
    with session_scope(sessions) as session:
        result = session.execute(delete(PendingRequest).where(PendingRequest.expires_at < utcnow()))
        return int(getattr(result, "rowcount", 0) or 0)


def run(settings: Settings, once: bool = False) -> None:
    sessions = sessionmaker_for(make_engine(settings.database.url, settings.database.timeout))
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info("worker started")
    ticks = 0
    while not stop.is_set():
        try:
            outbound.deliver_due(sessions, settings)
            if ticks % 60 == 0:
                expire_pending(sessions)
        except TryLater as exc:
            log.warning("worker: %s", exc)
        ticks += 1
        if once:
            break
        stop.wait(TICK_SECONDS)
