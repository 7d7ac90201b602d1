"""How Postfix's smtpd services reach mtaplugin, read the way Postfix reads them: the
milter socket as a chrooted smtpd sees it, the milter's ``default_action`` (what other
mail gets while mtaplugin is down), and the list-domain restriction that defers list mail
(and only list mail) while mtaplugin cannot decide it.

Each check looks at every ``inet`` smtpd service of master.cf that runs the milter (its
``-o`` overrides over main.cf), so a submission port wired differently is named too."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from mtaplugin.check.finding import Finding, error, ok
from mtaplugin.config import Settings, Socket, UnixSocket
from mtaplugin.i18n import _

#: the parameters an smtpd service may override with ``-o`` that these checks read
READ = ("smtpd_milters", "milter_default_action", "smtpd_recipient_restrictions")

#: the milter actions under which mail for other domains goes on while mtaplugin is down
_PASSING = {"accept"}


@dataclass(frozen=True)
class Smtpd:
    """One smtpd service of master.cf: its name, whether it is chrooted, and the values
    of the parameters these checks read, after its ``-o`` overrides."""

    name: str
    chrooted: bool
    values: dict[str, str]


@dataclass(frozen=True)
class Milter:
    """One entry of ``smtpd_milters``: its socket (as written) and its own settings."""

    socket: str
    options: dict[str, str]


def parse_milters(value: str) -> list[Milter]:
    """``unix:a, { inet:b, default_action=accept }`` -> the milters with their options
    (Postfix's brace syntax, postconf(5) "smtpd_milters")."""
    found: list[Milter] = []
    for token in re.findall(r"\{[^}]*\}|[^\s,{}]+", value):
        if token.startswith("{"):
            parts = [p.strip() for p in re.split(r"[\s,]+", token.strip("{} ")) if p.strip()]
            if not parts:
                continue
            options = dict(p.partition("=")[::2] for p in parts[1:] if "=" in p)
            found.append(Milter(parts[0], {k.strip(): v.strip() for k, v in options.items()}))
        else:
            found.append(Milter(token, {}))
    return found


def seen_path(socket: str, queue_directory: str, chrooted: bool) -> str | None:
    """The file a ``unix:`` milter socket names, as the smtpd process opens it: relative
    names are under the queue directory (Postfix runs there), and so is every name once
    the process is chrooted to it."""
    if not socket.startswith("unix:"):
        return None
    path = socket[len("unix:") :]
    if chrooted or not path.startswith("/"):
        path = str(Path(queue_directory) / path.lstrip("/"))
    return os.path.normpath(path)


def _same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def ours(milter: Milter, wanted: Socket, queue_directory: str) -> bool:
    """Whether an entry names mtaplugin's socket, chrooted or not (the admin meant it)."""
    if not isinstance(wanted, UnixSocket):
        return milter.socket.startswith("inet:") and milter.socket.endswith(f":{wanted.port}")
    return any(
        (p := seen_path(milter.socket, queue_directory, chrooted)) is not None
        and _same_file(p, wanted.path)
        for chrooted in (False, True)
    )


def check_chroot(settings: Settings, service: Smtpd, queue_directory: str) -> Finding | None:
    """An absolute socket path in a chrooted smtpd: the process looks for it under the
    queue directory and finds nothing, so Postfix applies the default action to every
    post (a nonmember's post and a post to an unknown list get 250, then a bounce)."""
    wanted = settings.milter.socket
    if not isinstance(wanted, UnixSocket):
        return None
    for milter in parse_milters(service.values.get("smtpd_milters", "")):
        if not ours(milter, wanted, queue_directory):
            continue
        seen = seen_path(milter.socket, queue_directory, service.chrooted)
        if seen is not None and not _same_file(seen, wanted.path):
            relative = os.path.relpath(wanted.path, queue_directory)
            return error(
                f"postfix.milter_chroot.{service.name}",
                _(
                    "master.cf's {service} smtpd is chrooted to {queue}, so it looks for "
                    "{socket} at {seen}, which is not mtaplugin's socket: posts are then "
                    "accepted without a decision and refused later (backscatter)"
                ).format(
                    service=service.name, queue=queue_directory, socket=milter.socket, seen=seen
                ),
                _(
                    "write the socket relative to the queue directory: smtpd_milters = "
                    "{{ unix:{relative}, default_action=accept }}, then `postfix reload`"
                ).format(relative=relative),
            )
    return None


def check_default_action(
    settings: Settings, service: Smtpd, queue_directory: str
) -> Finding | None:
    """mtaplugin's milter entry must fail open (``default_action=accept``): the list
    restriction defers list mail while mtaplugin is down; any other action defers or
    refuses the mail of every other domain too."""
    wanted = settings.milter.socket
    for milter in parse_milters(service.values.get("smtpd_milters", "")):
        if not ours(milter, wanted, queue_directory):
            continue
        action = (
            milter.options.get(
                "default_action", service.values.get("milter_default_action", "tempfail")
            ).strip()
            or "tempfail"
        )
        if action not in _PASSING:
            return error(
                f"postfix.milter_default_action.{service.name}",
                _(
                    "the {service} smtpd's milter {socket} has default_action={action}: "
                    "while mtaplugin is down, mail for every other domain is refused or "
                    "deferred too"
                ).format(service=service.name, socket=milter.socket, action=action),
                _(
                    "set default_action=accept on mtaplugin's milter (smtpd_milters = "
                    "{{ {socket}, default_action=accept }}), then `postfix reload`"
                ).format(socket=milter.socket),
            )
    return None


def _restriction_table(settings: Settings) -> str:
    return str(Path(settings.lookup.tables_dir) / "domains")


def check_list_restriction(settings: Settings, service: Smtpd) -> Finding | None:
    """``smtpd_recipient_restrictions`` asks the list-domains table first: without it,
    list mail is answered 250 while mtaplugin is down and waits in the queue undecided;
    after a ``permit_*`` it is never reached for the clients that permit lets through."""
    if not settings.lookup.tables_dir:
        return None
    table = _restriction_table(settings)
    steps = [
        s for s in re.split(r"[\s,]+", service.values.get("smtpd_recipient_restrictions", "")) if s
    ]
    where = None
    for i, step in enumerate(steps[:-1]):
        nxt = steps[i + 1]
        if (
            step == "check_recipient_access"
            and nxt.partition(":")[2]
            and _same_file(nxt.partition(":")[2], table)
        ):
            where = i
            break
    fix = _(
        "put `check_recipient_access {type}:{table}` first in smtpd_recipient_restrictions "
        "(contrib/postfix/main.cf), then `postfix reload`"
    ).format(type=settings.lookup.table_type, table=table)
    name = f"postfix.list_restriction.{service.name}"
    if where is None:
        return error(
            name,
            _(
                "the {service} smtpd's smtpd_recipient_restrictions does not ask {table}: "
                "while mtaplugin is down, list mail is answered 250 and waits undecided"
            ).format(service=service.name, table=table),
            fix,
        )
    permits = [s for s in steps[:where] if s.startswith("permit")]
    if permits:
        return error(
            name,
            _(
                "the {service} smtpd's smtpd_recipient_restrictions has {permit} before the "
                "list-domain check: posts from those clients are not deferred while "
                "mtaplugin is down"
            ).format(service=service.name, permit=permits[0]),
            fix,
        )
    return None


def check(settings: Settings, services: list[Smtpd], queue_directory: str) -> list[Finding]:
    """The three checks over every smtpd service that runs mtaplugin's milter; one ok
    finding when all hold."""
    findings: list[Finding] = []
    wired = [
        s
        for s in services
        if any(
            ours(m, settings.milter.socket, queue_directory)
            for m in parse_milters(s.values.get("smtpd_milters", ""))
        )
    ]
    for service in wired:
        for found in (
            check_chroot(settings, service, queue_directory),
            check_default_action(settings, service, queue_directory),
            check_list_restriction(settings, service),
        ):
            if found is not None:
                findings.append(found)
    if not findings and wired:
        findings.append(
            ok(
                "postfix.wiring",
                _(
                    "smtpd {services}: the milter is reachable, fails open, and list mail "
                    "is deferred first while mtaplugin is down"
                ).format(services=", ".join(s.name for s in wired)),
            )
        )
    return findings
