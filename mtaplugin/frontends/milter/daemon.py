"""``mtaplugin milter``: run the milter on the configured socket."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable

import Milter
import milter as libmilter

from mtaplugin.config import Socket, UnixSocket
from mtaplugin.frontends.milter import prefork
from mtaplugin.frontends.milter.session import FLAGS, milter_class
from mtaplugin.frontends.sockets import give_group, umask_for
from mtaplugin.wiring import World, list_engine

log = logging.getLogger(__name__)


def run(world: World) -> int:
    """Serve until stopped; the exit status (not 0: a process of the milter failed)."""
    milter = world.settings.milter
    cls = milter_class(milter.socket, milter.trust_auth, milter.log_connections)
    Milter.set_flags(FLAGS)
    if isinstance(milter.socket, UnixSocket):
        os.makedirs(os.path.dirname(milter.socket.path), exist_ok=True)
        # libmilter creates the socket with the process umask: the mode (0660 by default)
        # lets the owner and the MTA's group connect, nobody else; the group follows once
        # the socket exists (reference §3, "unix-socket gotcha").
        os.umask(umask_for(milter.socket))
    forked = milter.processes > 1

    def serve() -> int:
        if forked:
            # the parent's connections (if it made any) are not this process's to use
            world.db.dispose(close=False)
        engine = list_engine(world)
        Milter.factory = lambda: cls(engine)
        # (its thread blocks the stop signals: libmilter's signal thread takes them and
        # stops the milter in order, where a thread of ours with the default action would
        # end the process at once)
        with prefork.held():
            engine.start()
        try:
            # libmilter handles SIGTERM/SIGINT itself: main returns, and the pending post
            # counts are written before the process ends.
            libmilter.main()
        finally:
            engine.close()
        return 0

    log.info("milter listening on %s (%d processes)", milter.socket, milter.processes)
    return _run("mtaplugin", milter.socket, milter.timeout, serve, milter.processes)


def _run(
    name: str, socket: Socket, timeout: int, serve: Callable[[], int], processes: int = 1
) -> int:
    """pymilter's ``Milter.runmilter``, with the socket's group set between libmilter
    opening the socket and accepting the first connection; then ``serve`` (which runs
    libmilter's accept loop) in this process, or in each of ``processes`` children
    (:mod:`~mtaplugin.frontends.milter.prefork`)."""
    libmilter.set_connect_callback(Milter.connect_callback)
    libmilter.set_helo_callback(lambda ctx, host: ctx.getpriv().hello(host))
    libmilter.set_envfrom_callback(lambda ctx, *b: ctx.getpriv().envfrom_bytes(*b))
    libmilter.set_envrcpt_callback(lambda ctx, *b: ctx.getpriv().envrcpt_bytes(*b))
    libmilter.set_header_callback(lambda ctx, f, v: ctx.getpriv().header_bytes(f, v))
    libmilter.set_eoh_callback(lambda ctx: ctx.getpriv().eoh())
    libmilter.set_body_callback(lambda ctx, chunk: ctx.getpriv().body(chunk))
    libmilter.set_eom_callback(lambda ctx: ctx.getpriv().eom())
    libmilter.set_abort_callback(lambda ctx: ctx.getpriv().abort())
    libmilter.set_close_callback(Milter.close_callback)
    told = _told(socket, processes)
    libmilter.setconn(str(told))
    if timeout > 0:
        libmilter.settimeout(timeout)
    libmilter.register(
        name,
        data=lambda ctx: ctx.getpriv().data(),
        unknown=lambda ctx, cmd: ctx.getpriv().unknown(cmd),
        negotiate=Milter.negotiate_callback,
    )
    listening = prefork.opened_sockets(lambda: libmilter.opensocket(True))
    if isinstance(told, UnixSocket) and told != socket:
        assert isinstance(socket, UnixSocket)
        os.rename(told.path, socket.path)
    if isinstance(socket, UnixSocket):
        give_group(socket)
    if processes == 1:
        return serve()
    prefork.share(listening)
    return prefork.run_children(processes, serve)


def _told(socket: Socket, processes: int) -> Socket:
    """The socket libmilter is told of.  With several processes, a unix socket is opened
    under a name of its own and renamed onto the configured path: a process that stops runs
    libmilter's closing, which (when not root) unlinks the file of the name it was told,
    and a process can outlive a parent killed outright by the moment the restarted milter
    listens on the configured path.  So nothing of an old milter removes a new one's socket,
    and the new socket replaces the old file in one step.  (The file then stays after the
    milter stops, answering "connection refused" as a missing one answers "no such file".)"""
    if processes == 1 or not isinstance(socket, UnixSocket):
        return socket
    return dataclasses.replace(socket, path=f"{socket.path}.{os.getpid()}")
