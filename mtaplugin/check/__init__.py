"""``mtaplugin check``: what an admin runs after installing (and after any change): the
settings, the list database, mtaplugin's sockets as the MTA meets them, Postfix's wiring,
the re-injection listener and DNS, each reported as a :class:`~.finding.Finding` with what
to do.

- :mod:`.finding`: the findings and their levels;
- :mod:`.access`: who may open a path (the permission bits, read for another user);
- :mod:`.probes`: a few words of each protocol (milter, socketmap, LMTP);
- :mod:`.database`, :mod:`.sockets`, :mod:`.postfix`, :mod:`.postfix_wiring`,
  :mod:`.exim`, :mod:`.reinjection`, :mod:`.names`:
  the checks.

Nothing is changed by a check: no key is activated, nothing is sent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mtaplugin.check import access, database, exim, names, postfix, reinjection, sockets
from mtaplugin.check.finding import Finding, Level, error, ok, warning, worst
from mtaplugin.config import ConfigError, Settings, UnixSocket
from mtaplugin.i18n import _

__all__ = ["Finding", "Level", "Options", "run", "worst"]


@dataclass(frozen=True)
class Options:
    #: Postfix's configuration directory (``postconf -c``); None: none here
    postfix_dir: Path | None = None
    #: the user the MTA's processes connect as; None: Postfix's mail_owner, else "postfix"
    mta_user: str | None = None
    #: Exim's configuration file; None: Exim's wiring is not read
    exim_config: Path | None = None


def _settings(settings: Settings) -> Finding:
    from mtaplugin.api import exposure

    try:
        exposure.check(settings)
    except ConfigError as exc:
        return error("settings", str(exc), _("correct the setting it names"))
    source = settings.source or _("the environment")
    return ok("settings", _("settings read from {source}").format(source=source))


def _mta_user(options: Options) -> tuple[access.User | None, Finding | None]:
    name = options.mta_user or postfix.mail_owner(options.postfix_dir) or "postfix"
    found = access.user(name)
    if found is None:
        return None, warning(
            "mta.user",
            _(
                "no user {user} on this system: who may connect to the sockets was not checked"
            ).format(user=name),
            _("name the MTA's user with --mta-user USER (Exim: Debian-exim)"),
        )
    return found, None


def _service_user(settings: Settings) -> access.User | None:
    """The user mtaplugin runs as: the owner of its milter socket (libmilter makes it)."""
    sock = settings.milter.socket
    if not isinstance(sock, UnixSocket):
        return None
    try:
        return access.owner(os.stat(sock.path).st_uid)
    except OSError:
        return None


def _exists(settings: Settings) -> bool:
    from mtaplugin.config import sqlite_path

    path = sqlite_path(settings.database.url)
    return path is None or path.exists()


def run(settings: Settings, options: Options) -> list[Finding]:
    from mtaplugin import wiring
    from mtaplugin.db import session_scope
    from mtaplugin.errors import TryLater
    from mtaplugin.manage import domains as domain_manager

    findings = [_settings(settings)]
    # Exim's configuration named: Exim is the MTA (it never opens the milter's sockets; the
    # outbox submits to its SMTP port, where contrib's RCPT ACL answers for list addresses)
    exim_host = options.exim_config is not None
    world = wiring.build(settings)
    try:
        db_file = database.check_file(settings, _service_user(settings))
        findings += db_file
        schema = None
        if _exists(settings):  # (connecting would make an empty SQLite database)
            schema = database.check_schema(world.db, settings.database.url)
            findings.append(schema)
        schema_ok = schema is not None and schema.level == Level.ok
        list_domains: list[str] = []
        if schema_ok:
            try:
                with session_scope(world.sessions) as s:
                    list_domains = [d.mail_host for d, _n in domain_manager.all_domains(s)]
            except TryLater:
                pass
        mta_user, problem = _mta_user(options)
        findings += [problem] if problem else []
        findings += sockets.check(settings, mta_user, exim=exim_host)
        findings += postfix.check(settings, options.postfix_dir)
        findings += exim.check(options.exim_config)
        findings += reinjection.check(
            settings, list_domains[0] if list_domains else None, exim=exim_host
        )
        probe_domain = list_domains[0] if list_domains else "example.org"
        resolver_finding = names.check_resolver(settings, world.resolver, probe_domain)
        findings.append(resolver_finding)
        if schema_ok and resolver_finding.level == Level.ok:
            with session_scope(world.sessions) as s:
                findings += names.check_dkim(s, world.resolver)
    finally:
        world.close()
    return findings
