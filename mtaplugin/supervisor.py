"""``mtaplugin serve``: run the milter, the lookup server, the API and the worker (and the
LMTP front end and Exim query server when enabled), restart what dies."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time
from types import FrameType

from mtaplugin.api import exposure
from mtaplugin.config import Settings

log = logging.getLogger(__name__)

PARTS = ("milter", "lookup", "api", "worker")
#: parts run only when their setting says so (``lmtp.enabled``, ``exim.enabled``)
OPTIONAL_PARTS = ("lmtp", "exim")
#: a part that dies is restarted after this many seconds, doubling up to a minute while it
#: keeps dying young; a part that had run RESTART_HEALTHY seconds starts the count again
RESTART_FIRST = 1.0
RESTART_MAX = 60.0
RESTART_HEALTHY = 10.0


def restart_delay(previous: float, ran_for: float) -> float:
    """How long to wait before restarting a part that died after ``ran_for`` seconds,
    ``previous`` being the wait before its last start (0 for the first).  A crash loop
    backs off; a part that had run a while (a kill -9, an out-of-memory kill) is back
    after RESTART_FIRST, however many times it died before."""
    if ran_for >= RESTART_HEALTHY or previous <= 0:
        return RESTART_FIRST
    return min(previous * 2, RESTART_MAX)


def _start(part: str, settings: Settings) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "mtaplugin.cli"]
    if settings.source:
        argv += ["--config", settings.source]
    return subprocess.Popen([*argv, part])


def parts(settings: Settings) -> tuple[str, ...]:
    """The parts ``mtaplugin serve`` runs with these settings."""
    extra = tuple(p for p in OPTIONAL_PARTS if getattr(settings, p).enabled)
    return PARTS + extra


def run(settings: Settings) -> int:
    # refused here, once, rather than by the API part at every restart
    exposure.check(settings)
    wanted = parts(settings)
    running = {part: _start(part, settings) for part in wanted}
    started = dict.fromkeys(wanted, time.monotonic())
    delays = dict.fromkeys(wanted, 0.0)
    stopping = False

    def _stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info("serving: %s", ", ".join(f"{p} (pid {running[p].pid})" for p in wanted))
    while not stopping:
        time.sleep(0.5)
        for part, proc in list(running.items()):
            code = proc.poll()
            if code is None or stopping:
                continue
            delays[part] = restart_delay(delays[part], time.monotonic() - started[part])
            log.error("%s exited with %s; restarting in %.0f s", part, code, delays[part])
            time.sleep(delays[part])
            running[part] = _start(part, settings)
            started[part] = time.monotonic()
    for proc in running.values():
        proc.terminate()
    deadline = time.monotonic() + 10
    for proc in running.values():
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
    return 0
