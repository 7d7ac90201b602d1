"""More than one milter process on one socket (``milter.processes``).

libmilter gives each MTA connection a thread, and every callback of every connection runs
Python under one interpreter lock, so one milter process uses one core at most: the
decisions' own Python is what it spends its CPU on (docs/benchmarks.md, "The eighth
pass": under load the lock's hand-overs were 0.09 % of it).  Where one process saturates
its core and others are idle, more processes share the work.  So the socket is opened
once, by the parent (libmilter's ``smfi_opensocket``: the socket's mode and group are set
there), and ``processes`` children each run libmilter's accept loop on it, as a
pre-forked server does: the kernel gives each new MTA connection to one of them.

The listening socket is made non-blocking: all children wake for a new connection, one
accepts it, and the others' ``accept()`` answers EAGAIN, which libmilter's loop takes as
"nothing to do" (it would otherwise block in ``accept()`` until the next connection, deaf
to a stop).

The parent serves nothing.  It forwards SIGTERM, SIGINT and SIGHUP to the children and
waits for them.  When a child ends without being asked to (it crashed, or libmilter gave
up), the parent stops the others and ends with that child's status, so that the service
manager (``mtaplugin serve``, systemd) starts the milter again from a clean state.  A child
whose parent is gone stops itself (:func:`_stop_with`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import stat
from collections.abc import Callable, Iterator
from types import FrameType

log = logging.getLogger(__name__)

#: the signals the parent passes on to its children
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: prctl(2)'s request: a signal for this process when its parent ends
_PR_SET_PDEATHSIG = 1


@contextlib.contextmanager
def held() -> Iterator[set[int | signal.Signals]]:
    """The stop signals held in this thread inside: a thread started there, or a child
    forked there, inherits a mask that blocks them.  Yields the mask from before, which a
    child forked inside restores for itself."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    try:
        yield previous
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _sockets() -> set[tuple[int, int, int]]:
    """The process's open sockets: (descriptor, device, inode)."""
    found = set()
    for name in os.listdir("/dev/fd"):
        try:
            info = os.fstat(int(name))
        except OSError:  # the descriptor listdir read /dev/fd with, closed again
            continue
        if stat.S_ISSOCK(info.st_mode):
            found.add((int(name), info.st_dev, info.st_ino))
    return found


def opened_sockets(open_socket: Callable[[], object]) -> list[int]:
    """Call ``open_socket`` (libmilter's ``opensocket``) and return the socket descriptors
    it opened: libmilter keeps its listening descriptor to itself.  (By inode, not by
    number: the new socket may take the number listdir used before.)"""
    before = _sockets()
    open_socket()
    return sorted(fd for fd, _dev, _ino in _sockets() - before)


def share(listening: list[int]) -> None:
    """Make the listening socket safe to accept on from several processes (non-blocking:
    a process that loses the race for a connection goes back to waiting)."""
    if len(listening) != 1:
        raise RuntimeError(f"libmilter opened {len(listening)} sockets, expected one")
    os.set_blocking(listening[0], False)


def run_children(count: int, serve: Callable[[], int]) -> int:
    """Fork ``count`` children that each run ``serve`` (libmilter's accept loop, until it
    is stopped) and exit with what it returns; wait for them.  The parent's status: 0 when
    the children were stopped by a signal it forwarded, else the first unasked end's."""
    parent = os.getpid()
    children: set[int] = set()
    stopping = False

    def stop(signum: int, frame: FrameType | None = None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    # The handlers are in place before the first child exists, and the signals held until
    # then: a stop that comes while the children are made reaches every one of them.
    with held() as mask:
        previous = {signum: signal.signal(signum, stop) for signum in FORWARDED}
        for number in range(count):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child (tests see its work)
                code = 1
                try:
                    code = _child(number, parent, serve, mask)
                finally:
                    # never back into the parent's loop, whatever happened
                    os._exit(code)
            children.add(pid)
    status = 0
    try:
        while children:
            try:
                pid, wait_status = os.wait()
            except ChildProcessError:
                break
            if pid not in children:
                continue  # (a child of the parent's own, not a milter process)
            children.discard(pid)
            code = os.waitstatus_to_exitcode(wait_status)
            if not stopping:
                log.error(
                    "milter process %d ended (status %d): stopping the other %d",
                    pid, code, len(children),
                )  # fmt: skip
                # (killed by a signal: 128 + its number, as a shell says it)
                status = code if code > 0 else 128 - code if code < 0 else 1
                stop(signal.SIGTERM)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return status


def _child(
    number: int, parent: int, serve: Callable[[], int], mask: set[int | signal.Signals]
) -> int:  # pragma: no cover - runs in the child
    for signum in FORWARDED:
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    _stop_with(parent)
    try:
        return serve()
    except BaseException:
        log.exception("milter process %d (%d of the socket's) failed", os.getpid(), number + 1)
        return 1


def _stop_with(parent: int) -> None:  # pragma: no cover - runs in the child
    """Have the kernel send this child SIGTERM when its parent ends (Linux's
    ``PR_SET_PDEATHSIG``): a parent killed outright forwards nothing, and its children must
    not go on accepting on a socket the next milter has replaced."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
    except (OSError, AttributeError):
        log.warning("cannot ask to be stopped with the parent (no prctl): not watched")
        return
    if os.getppid() != parent:  # it ended before the request
        os.kill(os.getpid(), signal.SIGTERM)
