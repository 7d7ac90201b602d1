"""What Postfix's own configuration says (``postconf -c DIR``): that its smtpd hands mail
to mtaplugin's milter socket, and that the re-injection listener, where the outbox hands
mail back, runs no milter (else every post the worker sends would be decided again)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from mtaplugin.check import postfix_wiring
from mtaplugin.check.finding import Finding, error, ok, warning
from mtaplugin.config import InetSocket, Settings, Socket, UnixSocket
from mtaplugin.config.postconf import PostconfError, Postfix
from mtaplugin.i18n import _


def smtpd_services(postfix: Postfix) -> list[postfix_wiring.Smtpd]:
    """master.cf's inet smtpd services, chrooted or not, with the values the wiring
    checks read (main.cf's, under each service's ``-o`` overrides)."""
    base = {name: postfix.value(name) for name in postfix_wiring.READ}
    overrides = postfix.services()
    found = []
    for line in postfix.postconf("-M").splitlines():
        fields = line.split()
        if len(fields) < 8 or fields[1] != "inet" or fields[7] != "smtpd":
            continue
        values = {
            **base,
            **{
                k: v
                for k, v in overrides.get((fields[0], "inet"), {}).items()
                if k in postfix_wiring.READ
            },
        }
        found.append(postfix_wiring.Smtpd(fields[0], fields[4] == "y", values))
    return found


def milter_targets(value: str, queue_directory: str) -> list[Socket]:
    """The sockets a ``smtpd_milters`` value names; a relative unix path is under the
    queue directory (where a chrooted smtpd sees it)."""
    found: list[Socket] = []
    for token in re.split(r"[\s,{}]+", value):
        if token.startswith("unix:"):
            path = token[len("unix:") :]
            if not path.startswith("/"):
                path = str(Path(queue_directory) / path)
            found.append(UnixSocket(os.path.normpath(path)))
        elif token.startswith("inet:"):
            host, _c, port = token[len("inet:") :].rpartition(":")
            if port.isdigit():
                found.append(InetSocket(host.strip("[]") or "127.0.0.1", int(port)))
    return found


def _same(a: Socket, b: Socket) -> bool:
    if isinstance(a, UnixSocket) and isinstance(b, UnixSocket):
        return os.path.realpath(a.path) == os.path.realpath(b.path)
    if isinstance(a, InetSocket) and isinstance(b, InetSocket):
        local = {"127.0.0.1", "localhost"}
        hosts_match = a.host == b.host or {a.host, b.host} <= local
        return hosts_match and a.port == b.port
    return False


def check_milter(settings: Settings, postfix: Postfix) -> Finding:
    name = "postfix.smtpd_milters"
    value = postfix.value("smtpd_milters")
    wanted = settings.milter.socket
    if any(_same(t, wanted) for t in milter_targets(value, postfix.value("queue_directory"))):
        return ok(name, _("Postfix's smtpd hands mail to {socket}").format(socket=wanted))
    return error(
        name,
        _("smtpd_milters in {conf}/main.cf does not name {socket} (it says: {value})").format(
            conf=postfix.conf, socket=wanted, value=value or "-"
        ),
        _(
            "add the lines of contrib/postfix/main.cf to main.cf with mtaplugin's socket "
            "(milter.socket), then `postfix reload`"
        ),
    )


def _listener_names(settings: Settings) -> set[str]:
    out = settings.outbox
    names = {f"{out.host}:{out.port}", f"[{out.host}]:{out.port}"}
    if out.host in ("127.0.0.1", "localhost", "::1"):
        names.add(str(out.port))
    return names


def check_reinjection(settings: Settings, postfix: Postfix) -> Finding:
    """master.cf has a listener at outbox.host:outbox.port, and it runs no milter."""
    name = "postfix.reinjection"
    where = f"{settings.outbox.host}:{settings.outbox.port}"
    wanted = _listener_names(settings)
    service = next((s for s in postfix.inet_services() if s in wanted), None)
    if service is None:
        return error(
            name,
            _("{conf}/master.cf has no listener at {where} (outbox.host, outbox.port)").format(
                conf=postfix.conf, where=where
            ),
            _(
                "add the service of contrib/postfix/master.cf to master.cf and "
                "`postfix reload`, or correct outbox.host and outbox.port"
            ),
        )
    overrides = postfix.services().get((service, "inet"), {})
    milters = overrides.get("smtpd_milters", postfix.value("smtpd_milters"))
    options = overrides.get("receive_override_options", postfix.value("receive_override_options"))
    if milters.strip() and "no_milters" not in options:
        return error(
            name,
            _(
                "the re-injection listener {where} runs the milters {milters}: what the "
                "outbox sends would be decided again"
            ).format(where=where, milters=milters),
            _("add `-o smtpd_milters=` to the listener in master.cf, then `postfix reload`"),
        )
    return ok(
        name,
        _("master.cf: the re-injection listener {where} runs no milter").format(where=where),
    )


def check(settings: Settings, conf: Path | None) -> list[Finding]:
    if conf is None:
        return [
            ok(
                "postfix",
                _("no Postfix configuration here: its wiring was not read (--postfix DIR)"),
            )
        ]
    postfix = Postfix(conf)
    try:
        wiring = postfix_wiring.check(
            settings, smtpd_services(postfix), postfix.value("queue_directory")
        )
        return [check_milter(settings, postfix), check_reinjection(settings, postfix), *wiring]
    except (PostconfError, OSError, subprocess.SubprocessError) as exc:
        return [
            warning(
                "postfix",
                _("cannot read Postfix's configuration in {conf}: {error}").format(
                    conf=conf, error=exc
                ),
                _("give the directory of main.cf with --postfix DIR"),
            )
        ]


def mail_owner(conf: Path | None) -> str | None:
    """The user Postfix's processes run as (``mail_owner``), when Postfix can tell."""
    if conf is None:
        return None
    try:
        return Postfix(conf).value("mail_owner") or None
    except (PostconfError, OSError, subprocess.SubprocessError):
        return None
