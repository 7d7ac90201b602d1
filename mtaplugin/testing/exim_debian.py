"""Exim as Debian ships it, with contrib/exim pasted as docs/exim.md says.

The configuration is package exim4-config's own ``/etc/exim4/exim4.conf.template`` (the
non-split scheme), extracted into the package cache like the Exim binary.  The snippets are
pasted into it where docs/exim.md's "On Debian" steps put them:

- ``main.conf`` just before ``begin acl`` (the end of the main section);
- ``acl_rcpt.conf`` directly under ``acl_check_rcpt:``, before Debian's ``accept hosts =
  +relay_from_hosts`` and ``accept authenticated = *``;
- ``acl_data.conf`` directly under ``acl_check_data:``;
- ``routers.conf`` directly under ``begin routers``;
- ``transports.conf`` directly under ``begin transports``.

Then it is rendered as ``update-exim4.conf`` renders it (comment lines dropped, the debconf
macros inserted after ``UPEX4CmacrosUPEX4C = 1``) for the answers of a loopback-only
machine that sends everything else to a smarthost (``dc_eximconfig_configtype =
smarthost``, ``dc_local_interfaces = 127.0.0.1``, ``dc_smarthost`` = the sink on
127.0.0.2).

What only the lab changes, in ``exim4.conf.localmacros`` (Debian's place for local
settings, read before the template): ``CONFDIR``, ``SPOOLDIR``, the log and pid paths and
the SMTP port; and ``exim_path`` in the rendered file (the binary is in the package cache,
not /usr/sbin).  The rendered file is listed in ``/etc/exim4/trusted_configs`` (the
binary's ``TRUSTED_CONFIG_LIST``), so that Exim keeps root with ``-C`` and runs as an
installed one does: the daemon as root, receptions as Debian-exim.  Must run as root.
"""

from __future__ import annotations

import fcntl
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from mtaplugin.testing.debpkg import extract
from mtaplugin.testing.exim import EximLab, PrivateExim

CONFIG_PACKAGE = "exim4-config"
TEMPLATE = "etc/exim4/exim4.conf.template"
#: the binary's TRUSTED_CONFIG_LIST: a -C file named there keeps root
TRUSTED_CONFIGS = Path("/etc/exim4/trusted_configs")
#: the smarthost (the sink): not an address Exim listens on, so not "the local host"
SMARTHOST = "127.0.0.2"
SNIPPETS = ("main.conf", "acl_rcpt.conf", "acl_data.conf", "routers.conf", "transports.conf")
#: update-exim4.conf's marker line; the debconf macros go after it
MACROS_MARKER = "UPEX4CmacrosUPEX4C = 1"


def template() -> str:
    """Debian's exim4.conf.template, from the package (extracted once into the cache)."""
    tree = extract(CONFIG_PACKAGE, [CONFIG_PACKAGE], TEMPLATE, {})
    return (tree / TEMPLATE).read_text()


def _after(text: str, line: str, insert: str) -> str:
    """``text`` with ``insert`` directly after its one line ``line`` (before it when
    ``line`` starts with ``begin acl``: the end of the main section)."""
    lines = text.split("\n")
    at = [i for i, x in enumerate(lines) if x.rstrip() == line]
    if len(at) != 1:
        raise ValueError(f"{line!r} is not one line of the template ({len(at)} found)")
    i = at[0] if line == "begin acl" else at[0] + 1
    return "\n".join([*lines[:i], insert.rstrip("\n"), *lines[i:]])


def paste(text: str, snippets: dict[str, str]) -> str:
    """Debian's template with contrib/exim's snippets (by file name) where docs/exim.md
    puts them."""
    text = _after(text, "begin acl", snippets["main.conf"])
    text = _after(text, "acl_check_rcpt:", snippets["acl_rcpt.conf"])
    text = _after(text, "acl_check_data:", snippets["acl_data.conf"])
    text = _after(text, "begin routers", snippets["routers.conf"])
    return _after(text, "begin transports", snippets["transports.conf"])


def debconf_macros(smarthost: str, mailname: str, version: str) -> str:
    """The macros update-exim4.conf writes for Debian's "mail sent by smarthost; no local
    mail" answers on a loopback-only machine (update-exim4.conf.conf: configtype
    smarthost, local_interfaces 127.0.0.1, relay_nets empty, no other hostnames)."""
    seeded = [
        ("MAIN_LOCAL_INTERFACES", "127.0.0.1"),
        ("MAIN_PACKAGE_VERSION", version),
        ("MAIN_LOCAL_DOMAINS", "@:localhost"),
        ("MAIN_RELAY_TO_DOMAINS", ""),
        ("ETC_MAILNAME", mailname),
        ("LOCAL_DELIVERY", "mail_spool"),
        # dc_relay_nets empty: update-exim4.conf adds loopback
        ("MAIN_RELAY_NETS", " : 127.0.0.1 : ::::1"),
        ("DCreadhost", ""),
        ("DCsmarthost", smarthost),
        ("DC_eximconfig_configtype", "smarthost"),
        ("DCconfig_smarthost", "1"),
    ]
    body = "".join(f".ifndef {k}\n{k}={v}\n.endif\n" for k, v in seeded)
    rule = "##############################################\n"
    return f"{rule}# the following macro definitions were created\n{body}{rule}"


def render(localmacros: str, text: str, macros: str) -> str:
    """What update-exim4.conf makes of them (non-split): localmacros and the template,
    comment lines dropped, runs of blank lines squeezed, the macros after the marker."""
    kept = [x for x in f"{localmacros}\n{text}".split("\n") if not re.match(r"\s*#", x)]
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(kept))
    if out.count(f"\n{MACROS_MARKER}\n") != 1:
        raise ValueError("the template has no update-exim4.conf marker line")
    return out.replace(f"\n{MACROS_MARKER}\n", f"\n{MACROS_MARKER}\n{macros}", 1)


def trust(conf: Path, add: bool) -> None:
    """Name ``conf`` in (or take it out of) /etc/exim4/trusted_configs; other lines stay."""
    TRUSTED_CONFIGS.parent.mkdir(parents=True, exist_ok=True)
    with open(TRUSTED_CONFIGS, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        lines = [x for x in f.read().split("\n") if x and x != str(conf)]
        f.seek(0)
        f.truncate()
        f.write("".join(f"{x}\n" for x in [*lines, *([str(conf)] if add else [])]))
    TRUSTED_CONFIGS.chmod(0o644)


@dataclass
class DebianExim(PrivateExim):
    """:class:`PrivateExim` on Debian's default configuration (always the ACL way)."""

    relay_host: str = SMARTHOST

    def localmacros(self) -> str:
        return f"""\
CONFDIR = {self.root}/etc
SPOOLDIR = {self.root}/spool
log_file_path = {self.root}/log/%slog
pid_file_path = {self.root}/exim.pid
daemon_smtp_ports = {self.smtp_port}
"""

    def config_text(self) -> str:
        """Debian's template with the snippets pasted, rendered (with the lab's
        localmacros and exim_path)."""
        snippets = {name: self._snippet(name) for name in SNIPPETS}
        version = self.tree.name.split("-", 1)[1].replace("_", ":")
        macros = debconf_macros(
            f"{self.relay_host}::{self.relay_port}", f"{self.name}.test", version
        )
        text = render(self.localmacros(), paste(template(), snippets), macros)
        return text.replace("exim_path = /usr/sbin/exim4", f"exim_path = {self.binary}", 1)

    def write_config(self) -> None:
        super().write_config()
        (self.root / "etc").mkdir(exist_ok=True)
        self.conf.chmod(0o644)
        trust(self.conf, add=True)

    def stop(self) -> None:
        super().stop()
        trust(self.conf, add=False)


@dataclass
class DebianEximLab(EximLab):
    """:class:`EximLab` with Debian's default Exim configuration and contrib pasted in
    (the ACLs and the LMTP transport, the list-domains file mtaplugin keeps)."""

    exim_class: ClassVar[type[PrivateExim]] = DebianExim
    sink_host: ClassVar[str] = SMARTHOST
    domains_file: bool = True
