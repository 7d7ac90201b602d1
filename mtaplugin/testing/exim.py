"""A private Exim 4 on 127.0.0.1, run from Debian's package files and built from
mtaplugin's own contrib/exim/ snippets.

Layout under ``root``::

    exim.conf   a loopback-only base with the contrib snippets in their places
    spool/      spool_directory (owned by Debian-exim)
    log/        mainlog, rejectlog, paniclog

The base accepts SMTP on ``smtp_port`` and relays every non-list recipient to the sink at
``relay_port``; the contrib files are used as they are, with only their paths (and, for
the pipe variant, the transport and user) replaced, so a test that passes here checks the
snippets a mail admin pastes.  Must run as root.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from mtaplugin.testing import free_port, wait_for
from mtaplugin.testing.debpkg import ensure_system_user
from mtaplugin.testing.mta import LabBase, LabError, PrivateDaemon
from mtaplugin.testing.process import MtapluginProcess
from mtaplugin.testing.sink import Sink

CONTRIB = Path(__file__).resolve().parents[2] / "contrib" / "exim"
PACKAGES = ["exim4-daemon-heavy", "exim4-base"]
#: sonames exim4-daemon-heavy links that a Postfix machine usually lacks
LIBRARIES = {
    "libmariadb.so.3": "libmariadb3",
    "libidn.so.12": "libidn12",
    "libspf2.so.2": "libspf2-2",
    "libpq.so.5": "libpq5",
    "libldap-2.5.so.0": "libldap-2.5-0",
    "libsasl2.so.2": "libsasl2-2",
    "libgnutls-dane.so.0": "libgnutls-dane0",
    "libperl.so.5.36": "libperl5.36",
}
EXIM_USER = "Debian-exim"

# Packaged defaults in the contrib files, replaced by the instance's own.
DEFAULT_QUERY = "/run/mtaplugin/exim.sock"
DEFAULT_LMTP = "/run/mtaplugin/lmtp.sock"
DEFAULT_COMMAND = "/opt/mtaplugin/bin/mtaplugin --config /etc/mtaplugin/mtaplugin.toml"
DEFAULT_LIST_DOMAINS = "lsearch;/var/lib/mtaplugin/exim/domains"


@dataclass
class PrivateExim(PrivateDaemon):
    root: Path
    smtp_port: int
    relay_port: int
    query_socket: str
    lmtp_socket: str = ""
    #: "mtaplugin_lmtp" or "mtaplugin_pipe"
    transport: str = "mtaplugin_lmtp"
    #: the pipe variant: the mtaplugin command and the user it runs as
    command: str = ""
    #: Exim gives up root for a configuration given with -C (unless it is listed in the
    #: binary's TRUSTED_CONFIG_LIST), so the pipe can only run as the Exim user here
    pipe_user: str = EXIM_USER
    #: include the ACL snippets (SMTP-time decisions); without them every post is
    #: decided at delivery by the transport
    inline: bool = True
    passthrough_domains: tuple[str, ...] = ()
    name: str = "exim-lab"
    #: what the ``mtaplugin_list_domains`` domain list is: every domain (``*``: the lab
    #: asks mtaplugin about each, and a list domain made a moment ago is one at once), or
    #: contrib's ``lsearch;`` of the file mtaplugin keeps (``exim.domains_file``)
    list_domains: str = "*"
    #: acl_rcpt.conf pasted after the ``accept hosts = +relay_from_hosts`` statement (a
    #: mistake: ``mtaplugin check --exim`` names it)
    rcpt_acl_after_accept: bool = False

    label = "exim"

    def __post_init__(self) -> None:
        self.unpack("exim4", PACKAGES, "usr/sbin/exim4", LIBRARIES)

    @property
    def conf(self) -> Path:
        return self.root / "exim.conf"

    @property
    def mainlog(self) -> Path:
        return self.root / "log" / "mainlog"

    def _snippet(self, name: str) -> str:
        text = (CONTRIB / name).read_text()
        text = text.replace(DEFAULT_QUERY, self.query_socket).replace(
            DEFAULT_LMTP, self.lmtp_socket
        )
        if self.command:
            text = text.replace(DEFAULT_COMMAND, self.command)
        text = text.replace(DEFAULT_LIST_DOMAINS, self.list_domains)
        text = text.replace("MTAPLUGIN_USER = mtaplugin", f"MTAPLUGIN_USER = {self.pipe_user}")
        return text.replace(
            "MTAPLUGIN_TRANSPORT = mtaplugin_lmtp", f"MTAPLUGIN_TRANSPORT = {self.transport}"
        )

    def write_config(self) -> None:
        ensure_system_user(EXIM_USER, "/nonexistent")
        for d in (self.root, self.root / "spool", self.root / "log"):
            d.mkdir(parents=True, exist_ok=True)
        for d in (self.root / "spool", self.root / "log"):
            shutil.chown(d, EXIM_USER, EXIM_USER)
            os.chmod(d, 0o750)
        os.chmod(self.root, 0o755)
        self.conf.write_text(self.config_text())

    def config_text(self) -> str:
        """The loopback-only base with the contrib snippets in their places."""
        relay = " : ".join(self.passthrough_domains)
        acl_rcpt = self._snippet("acl_rcpt.conf") if self.inline else ""
        acl_data = self._snippet("acl_data.conf") if self.inline else ""
        relay_from = "  accept  hosts = +relay_from_hosts\n"
        accept_first = relay_from if self.rcpt_acl_after_accept else ""
        accept_after = "" if self.rcpt_acl_after_accept else relay_from
        return f"""\
# Private instance "{self.name}": loopback only, every other delivery to the sink.
exim_path = {self.binary}
keep_environment = LD_LIBRARY_PATH
spool_directory = {self.root}/spool
log_file_path = {self.root}/log/%slog
pid_file_path = {self.root}/exim.pid
primary_hostname = {self.name}.test
qualify_domain = {self.name}.test
daemon_smtp_ports = {self.smtp_port}
local_interfaces = 127.0.0.1
never_users = root
host_lookup =
rfc1413_hosts =
rfc1413_query_timeout = 0s
prdr_enable = false
tls_advertise_hosts =
domainlist local_domains =
domainlist relay_to_domains = {relay}
hostlist relay_from_hosts = 127.0.0.1
acl_smtp_rcpt = acl_check_rcpt
acl_smtp_data = acl_check_data
queue_run_max = 5
remote_max_parallel = 5
smtp_accept_max = 50
smtp_accept_queue_per_connection = 0
ignore_bounce_errors_after = 1m
timeout_frozen_after = 1h

# --- contrib/exim/main.conf ---
{self._snippet("main.conf")}

begin acl

acl_check_rcpt:
{accept_first}# --- contrib/exim/acl_rcpt.conf ---
{acl_rcpt}
{accept_after}  accept  domains = +relay_to_domains
  deny    message = relay not permitted

acl_check_data:
# --- contrib/exim/acl_data.conf ---
{acl_data}
  accept

begin routers

# --- contrib/exim/routers.conf ---
{self._snippet("routers.conf")}

to_sink:
  driver = manualroute
  route_list = * 127.0.0.1
  self = send
  transport = sink_smtp

begin transports

# --- contrib/exim/transports.conf ---
{self._snippet("transports.conf")}

sink_smtp:
  driver = smtp
  port = {self.relay_port}
  allow_localhost
  hosts_try_fastopen =

begin retry

*   *   F,1h,5s
"""

    def exim(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.binary), "-C", str(self.conf), *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=self.env(),
        )
        if check and proc.returncode != 0:
            raise LabError(f"exim {' '.join(args)} failed: {proc.stdout}{proc.stderr}")
        return proc

    def start(self) -> PrivateExim:
        self.require_root()
        self.write_config()
        self.exim("-bV")  # checks the configuration
        with open(self.root / "daemon.err", "ab") as err:
            self.spawn(
                [str(self.binary), "-C", str(self.conf), "-bdf", "-q5s"],
                self.smtp_port,
                subprocess.DEVNULL,
                err,
            )
        return self

    def log(self) -> str:
        parts = []
        for name in ("log/mainlog", "log/paniclog", "log/rejectlog", "daemon.err"):
            with contextlib.suppress(FileNotFoundError):
                parts.append((self.root / name).read_text(errors="replace"))
        return "\n".join(parts)

    def delivered_count(self) -> int:
        """Deliveries logged as done (``=>`` and ``->`` lines)."""
        try:
            text = self.mainlog.read_text(errors="replace")
        except FileNotFoundError:
            return 0
        return sum(1 for line in text.splitlines() if " => " in line or " -> " in line)

    def queue_empty(self) -> bool:
        return not self.exim("-bpc", check=False).stdout.strip().strip("0")

    def wait_queue_empty(self, timeout: float = 60) -> None:
        wait_for(self.queue_empty, timeout=timeout, interval=0.2)


def pipe_python() -> str:
    """How the pipe transport's user (never root) runs this mtaplugin: this interpreter
    when that user can reach it, else the system's python3 on this environment's
    packages (a Python under /root is out of reach)."""
    exe = Path(sys.executable)
    real = exe.resolve()
    if all(os.stat(p).st_mode & 0o001 for p in [*real.parents, *exe.parents]):
        return str(exe)
    import sqlalchemy

    import mtaplugin

    site = Path(sqlalchemy.__file__).parents[1]
    tree = Path(mtaplugin.__file__).parents[1]
    return f"/usr/bin/env PYTHONPATH={site}:{tree} /usr/bin/python3"


@dataclass
class EximLab(LabBase):
    """SMTP sink ← private Exim ← ``mtaplugin serve`` (with the LMTP front end and the
    Exim query server), the outbox submitting back to Exim's SMTP port."""

    root: Path
    database_url: str
    transport: str = "mtaplugin_lmtp"
    inline: bool = True
    passthrough_domains: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    name: str = "exim-lab"
    #: deliver to an SMTP server already listening there instead of the aiosmtpd sink
    external_sink_port: int = 0
    #: more TOML for mtaplugin's settings file (read by ``serve`` and by the pipe, whose
    #: environment Exim clears), e.g. a ``[dns]`` section
    extra_settings: str = ""
    #: Exim asks mtaplugin only about the domains in the file mtaplugin keeps
    #: (contrib's ``mtaplugin_list_domains``, ``exim.domains_file``), as installed
    domains_file: bool = False
    #: acl_rcpt.conf pasted after an ``accept`` (see :class:`PrivateExim`)
    rcpt_acl_after_accept: bool = False

    #: the Exim this lab runs (a subclass may run another configuration)
    exim_class: ClassVar[type[PrivateExim]] = PrivateExim
    #: where the sink listens (Exim's delivery to it)
    sink_host: ClassVar[str] = "127.0.0.1"

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        self.sockets = self.root / "run"
        self.sink = Sink(self.external_sink_port or free_port(), host=self.sink_host)
        self.config_file = self.root / "mtaplugin.toml"
        self.exim = self.exim_class(
            root=self.root / "exim",
            smtp_port=free_port(),
            relay_port=self.sink.port,
            query_socket=str(self.sockets / "exim.sock"),
            lmtp_socket=str(self.sockets / "lmtp.sock"),
            transport=self.transport,
            command=f"{pipe_python()} -m mtaplugin.cli --config {self.config_file}",
            inline=self.inline,
            passthrough_domains=self.passthrough_domains,
            name=self.name,
            list_domains=f"lsearch;{self.list_domains_file}" if self.domains_file else "*",
            rcpt_acl_after_accept=self.rcpt_acl_after_accept,
        )
        self.api_port = free_port()
        self.runner = MtapluginProcess(self.root)
        self.smtp_timeout = 60.0

    @property
    def smtp_port(self) -> int:
        return self.exim.smtp_port

    @property
    def list_domains_file(self) -> Path:
        return self.root / "list-domains"

    def settings_text(self) -> str:
        return f"""\
[database]
url = "{self.database_url}"
timeout = 1.0
[milter]
socket = "unix:{self.sockets}/milter.sock"
[lookup]
socket = "unix:{self.sockets}/lookup.sock"
tables_interval = 0.5
[lmtp]
socket = "unix:{self.sockets}/lmtp.sock"
socket_group = "{EXIM_USER}"
enabled = true
[exim]
socket = "unix:{self.sockets}/exim.sock"
socket_group = "{EXIM_USER}"
enabled = true
domains_file = "{self.list_domains_file if self.domains_file else ""}"
[api]
listen = "127.0.0.1:{self.api_port}"
workers = 1
[outbox]
port = {self.exim.smtp_port}
backoff_first = 1.0
[site]
var_dir = "{self.root}/var"
{self.extra_settings}"""

    def start(self) -> EximLab:
        # Before mtaplugin starts: its sockets take Exim's group (socket_group) only when
        # the group exists, and on a fresh machine the first Exim lab makes it.
        ensure_system_user(EXIM_USER, "/nonexistent")
        if not self.external_sink_port:
            self.sink.start()
        self.sockets.mkdir(exist_ok=True)
        os.chmod(self.sockets, 0o755)
        self.config_file.write_text(self.settings_text())
        os.chmod(self.config_file, 0o644)
        self.start_mtaplugin()
        self.exim.start()
        return self

    def mtaplugin_ready(self) -> bool:
        sockets = all((self.sockets / s).exists() for s in ("exim.sock", "lmtp.sock"))
        return sockets and (not self.domains_file or self.list_domains_file.exists())

    def start_mtaplugin(self) -> None:
        """``mtaplugin serve`` (again, after ``runner.stop()``: an outage ends)."""
        for name in ("exim.sock", "lmtp.sock"):
            (self.sockets / name).unlink(missing_ok=True)  # not taken for the new ones
        env = dict(os.environ)
        env.update(self.env)
        self.runner.start(
            ["--config", str(self.config_file), "serve"], env, self.mtaplugin_ready, LabError
        )

    def stop(self) -> None:
        self.exim.stop()
        self.runner.stop()
        if not self.external_sink_port:
            self.sink.stop()

    def mta_log(self) -> str:
        return self.exim.log()
