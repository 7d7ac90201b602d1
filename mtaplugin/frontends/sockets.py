"""What every unix-socket server of mtaplugin does around its socket (the LMTP front end,
the Exim query server, the socketmap server): make the directory, remove a socket left by
a process that died, open the new one to the MTA's group with the section's mode and group
(never to every user: a mode with o+w is refused when the settings are read), remove it at
the end.  The milter's socket is libmilter's own: :func:`umask_for` sets the mode it is
created with and :func:`give_group` its group once libmilter made it."""

from __future__ import annotations

import contextlib
import grp
import logging
import os
import socket
from collections.abc import Iterator

from mtaplugin.config import Socket, UnixSocket
from mtaplugin.errors import ConfigError
from mtaplugin.i18n import _

log = logging.getLogger(__name__)

#: the listen backlog of the socketmap and Exim query servers (the system's maximum,
#: ``net.core.somaxconn``).  socketserver's default is 5: under load Postfix's processes
#: (trivial-rewrite, smtpd) opened connections to the socketmap faster than its thread
#: accepted them, the sixth found the queue full (EAGAIN) and Postfix answered the
#: recipient "451 4.3.0 Temporary lookup failure"
LISTEN_BACKLOG = socket.SOMAXCONN


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
    """Give a listening unix socket its group and mode: the MTA's processes run as another
    user, in the MTA's group; nobody else may connect."""
    if isinstance(sock, UnixSocket):
        give_group(sock)
        os.chmod(sock.path, sock.mode)


def group_id(name: str) -> int | None:
    """The id of the group ``name``; None when the system has no such group (then the
    socket keeps the process's group)."""
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def give_group(sock: UnixSocket) -> None:
    """Give the socket file the group ``sock.group``, or leave the process's own when the
    system has no such group.  A process that may not use the group (it is neither root
    nor a member) is refused: the MTA could not connect."""
    gid = group_id(sock.group)
    if gid is None:
        log.warning(
            "no group %r on this system: %s keeps the group %s (socket_group)",
            sock.group,
            sock.path,
            _group_name(os.getegid()),
        )
        return
    try:
        os.chown(sock.path, -1, gid)
    except PermissionError:
        raise ConfigError(
            sock.group_key,
            _(
                "cannot give {path} the group {group} (socket_group): this process is neither "
                "root nor a member of {group}"
            ).format(path=sock.path, group=sock.group),
        ) from None


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def umask_for(sock: UnixSocket) -> int:
    """The umask under which a socket is created with ``sock.mode``."""
    return 0o777 & ~sock.mode
