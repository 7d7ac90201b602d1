"""``mtaplugin milter``: run the milter on the configured socket."""

from __future__ import annotations

import logging
import os

import Milter

from mtaplugin.config import Settings, milter_socket_path
from mtaplugin.engine import ListEngine
from mtaplugin.frontends.milter.session import FLAGS, milter_class

log = logging.getLogger(__name__)


def run(settings: Settings) -> None:
    engine = ListEngine.from_settings(settings)
    cls = milter_class(settings.milter.socket)
    Milter.factory = lambda: cls(engine)
    Milter.set_flags(FLAGS)
    path = milter_socket_path(settings)
    if path is not None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # libmilter creates the socket with the process umask; the MTA's smtpd runs
        # unprivileged and needs write permission (reference §3, "unix-socket gotcha").
        os.umask(0o777 & ~settings.milter.socket_mode & 0o777)
    log.info("milter listening on %s", settings.milter.socket)
    engine.start()
    try:
        # libmilter handles SIGTERM/SIGINT itself: runmilter returns, and the pending post
        # counts are written before the process ends.
        Milter.runmilter("mtaplugin", settings.milter.socket, settings.milter.timeout)
    finally:
        engine.close()
