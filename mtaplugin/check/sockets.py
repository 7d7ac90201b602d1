"""mtaplugin's listeners as the MTA meets them: each socket there, answering in its
protocol, and open to the MTA's user (a unix socket, and every directory above it)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from mtaplugin.check import access, probes
from mtaplugin.check.finding import Finding, error, ok
from mtaplugin.config import Settings, Socket, UnixSocket
from mtaplugin.i18n import _

Probe = Callable[[Socket], str]


def listeners(settings: Settings) -> list[tuple[str, Socket, Probe]]:
    """(section, socket, probe) of every listener ``mtaplugin serve`` runs with these
    settings."""
    found: list[tuple[str, Socket, Probe]] = [
        ("milter", settings.milter.socket, probes.milter),
        ("lookup", settings.lookup.socket, probes.socketmap),
    ]
    if settings.lmtp.enabled:
        found.append(("lmtp", settings.lmtp.socket, probes.greeting))
    if settings.exim.enabled:
        found.append(("exim", settings.exim.socket, probes.accepts))
    return found


def check_socket(
    section: str, sock: Socket, probe: Probe, mta_user: access.User | None
) -> list[Finding]:
    name = f"{section}.socket"
    if isinstance(sock, UnixSocket):
        found = _unix(name, sock, mta_user)
        if found is not None:
            return [found]
    problem = probe(sock)
    if problem:
        return [
            error(
                name,
                _("{socket}: no answer from mtaplugin's {part}: {problem}").format(
                    socket=sock, part=section, problem=problem
                ),
                _("start mtaplugin (`mtaplugin serve`, or `systemctl restart mtaplugin`)"),
            )
        ]
    return [ok(name, _("{socket}: mtaplugin's {part} answers").format(socket=sock, part=section))]


def _unix(name: str, sock: UnixSocket, mta_user: access.User | None) -> Finding | None:
    """The finding that stops a unix socket's check, or None to go on to the probe."""
    path = sock.path
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return error(
            name,
            _(
                "{path} does not exist: mtaplugin is not running, or runs with other settings"
            ).format(path=path),
            _("start mtaplugin (`mtaplugin serve`, or `systemctl restart mtaplugin`)"),
        )
    except PermissionError:
        return error(
            name,
            _("{path} cannot be reached by this command").format(path=path),
            _("run `mtaplugin check` as root or as mtaplugin's user"),
        )
    if not stat.S_ISSOCK(st.st_mode):
        return error(
            name,
            _("{path} is not a socket").format(path=path),
            _("remove it, then restart mtaplugin"),
        )
    if st.st_mode & stat.S_IWOTH:
        return error(
            name,
            _("{what}: every local user may connect and pose as the MTA").format(
                what=access.describe(path)
            ),
            _("chmod {mode:04o} {path}; restart mtaplugin to make it anew").format(
                mode=sock.mode, path=path
            ),
        )
    if mta_user is not None:
        blocked = access.blocker(mta_user, path, access.WRITE)
        if blocked is not None:
            return error(
                name,
                _("the MTA's user {user} cannot connect to {path}: {blocked} stops it").format(
                    user=mta_user.name, path=path, blocked=blocked
                ),
                _(
                    "restart mtaplugin: it makes {path} with mode {mode:04o} and group "
                    "{group} ({section}.socket_mode, socket_group); or by hand: "
                    "chgrp {group} {path} && chmod {mode:04o} {path}, and let {user} search "
                    "every directory above it"
                ).format(
                    path=path,
                    mode=sock.mode,
                    group=sock.group,
                    section=name.partition(".")[0],
                    user=mta_user.name,
                ),
            )
    return None


#: the listeners only Postfix and Sendmail connect to (Exim asks the LMTP and query ones)
MILTER_SIDE = ("milter", "lookup")


def check(settings: Settings, mta_user: access.User | None, exim: bool = False) -> list[Finding]:
    """Each listener; on an Exim host (``exim``) the MTA's user is not asked to reach the
    milter and lookup sockets, which Exim never opens (they are still probed)."""
    findings: list[Finding] = []
    for section, sock, probe in listeners(settings):
        user = None if exim and section in MILTER_SIDE else mta_user
        findings += check_socket(section, sock, probe, user)
    return findings
