"""What every unix-socket server of mtaplugin does around its socket (the LMTP front end,
the Exim query server, the socketmap server): make the directory, remove a socket left by
a process that died, open the new one to the MTA's user with the section's mode, remove it
at the end.  The milter's socket is libmilter's own: :func:`umask_for` sets the mode it is
created with."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from mtaplugin.config import Socket, UnixSocket


@contextlib.contextmanager
def unix_server(sock: Socket) -> Iterator[None]:
    """Around a server's life on a unix ``sock``: the directory made and a stale socket
    removed before; the socket removed after.  Nothing for an inet socket."""
    if not isinstance(sock, UnixSocket):
        yield
        return
    prepare(sock)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(sock.path)


def prepare(sock: UnixSocket) -> None:
    os.makedirs(os.path.dirname(sock.path), exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(sock.path)


def open_to_mta(sock: Socket) -> None:
    """Give a listening unix socket its mode: the MTA's processes run as another user."""
    if isinstance(sock, UnixSocket):
        os.chmod(sock.path, sock.mode)


def umask_for(sock: UnixSocket) -> int:
    """The umask under which a socket is created with ``sock.mode``."""
    return 0o777 & ~sock.mode
