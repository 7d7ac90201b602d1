"""``mtaplugin milter``: run the milter on the configured socket."""

from __future__ import annotations

import logging
import os

import Milter

from mtaplugin.config import UnixSocket
from mtaplugin.frontends.milter.session import FLAGS, milter_class
from mtaplugin.frontends.sockets import umask_for
from mtaplugin.wiring import World, list_engine

log = logging.getLogger(__name__)


def run(world: World) -> None:
    milter = world.settings.milter
    engine = list_engine(world)
    cls = milter_class(str(milter.socket))
    Milter.factory = lambda: cls(engine)
    Milter.set_flags(FLAGS)
    if isinstance(milter.socket, UnixSocket):
        os.makedirs(os.path.dirname(milter.socket.path), exist_ok=True)
        # libmilter creates the socket with the process umask; the MTA's smtpd runs
        # unprivileged and needs write permission (reference §3, "unix-socket gotcha").
        os.umask(umask_for(milter.socket))
    log.info("milter listening on %s", milter.socket)
    engine.start()
    try:
        # libmilter handles SIGTERM/SIGINT itself: runmilter returns, and the pending post
        # counts are written before the process ends.
        Milter.runmilter("mtaplugin", str(milter.socket), milter.timeout)
    finally:
        engine.close()
