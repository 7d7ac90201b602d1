"""A private Sendmail on 127.0.0.1, run from Debian's package files (sendmail-bin,
sendmail-cf, m4) and built from mtaplugin's own contrib/sendmail/mtaplugin.m4.

Layout under ``root``::

    sendmail.mc / sendmail.cf   a loopback-only base with the contrib lines in it
    mqueue/                     the queue (root, 0700)
    maillog                     the daemon's output (it logs to syslog, absent here)

Every delivery goes to the sink at ``relay_port`` (SMART_HOST).  Must run as root.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mtaplugin.frontends.common import crlf
from mtaplugin.testing import free_port
from mtaplugin.testing.mta import LabBase, LabError, PrivateDaemon
from mtaplugin.testing.process import MtapluginProcess
from mtaplugin.testing.sink import Sink

CONTRIB = Path(__file__).resolve().parents[2] / "contrib" / "sendmail"
PACKAGES = ["sendmail-bin", "sendmail-cf", "m4"]
LIBRARIES = {"libwrap.so.0": "libwrap0", "liblockfile.so.1": "liblockfile1"}

DEFAULT_MILTER = "unix:/run/mtaplugin/milter.sock"
DEFAULT_LOOKUP = "unix:/run/mtaplugin/lookup.sock"
DEFAULT_REINJECT = "Port=10026"


@dataclass
class PrivateSendmail(PrivateDaemon):
    root: Path
    smtp_port: int
    reinject_port: int
    relay_port: int
    milter_socket: str
    lookup_socket: str
    name: str = "sendmail-lab"

    label = "sendmail"

    def __post_init__(self) -> None:
        self.unpack("sendmail", PACKAGES, "usr/libexec/sendmail/sendmail", LIBRARIES)

    @property
    def cf(self) -> Path:
        return self.root / "sendmail.cf"

    @property
    def maillog(self) -> Path:
        return self.root / "maillog"

    def mc_text(self) -> str:
        snippet = (
            (CONTRIB / "mtaplugin.m4")
            .read_text()
            .replace(DEFAULT_MILTER, self.milter_socket)
            .replace(DEFAULT_LOOKUP, self.lookup_socket)
            .replace(DEFAULT_REINJECT, f"Port={self.reinject_port}")
        )
        r = self.root
        return f"""\
divert(-1)
# Private instance "{self.name}": loopback only, every delivery to the sink.
divert(0)dnl
VERSIONID(`mtaplugin private instance {self.name}')dnl
OSTYPE(`linux')dnl
define(`confDOMAIN_NAME', `{self.name}.test')dnl
define(`confDONT_PROBE_INTERFACES', `True')dnl
define(`confPID_FILE', `{r}/sendmail.pid')dnl
define(`QUEUE_DIR', `{r}/mqueue')dnl
define(`MSP_QUEUE_DIR', `{r}/clientmqueue')dnl
define(`STATUS_FILE', `{r}/statistics')dnl
define(`ALIAS_FILE', `{r}/aliases')dnl
define(`HELP_FILE', `{r}/helpfile')dnl
define(`confCW_FILE', `{r}/local-host-names')dnl
define(`confCR_FILE', `{r}/relay-domains')dnl
define(`confSERVICE_SWITCH_FILE', `{r}/service.switch')dnl
define(`confHOSTS_FILE', `/etc/hosts')dnl
define(`confDEF_USER_ID', `mail:mail')dnl
define(`confLOG_LEVEL', `14')dnl
define(`confTO_IDENT', `0s')dnl
define(`confDELIVERY_MODE', `background')dnl
define(`confMIN_QUEUE_AGE', `0')dnl
define(`confDONT_BLAME_SENDMAIL', `TrustStickyBit')dnl
define(`SMART_HOST', `[127.0.0.1]')dnl
define(`RELAY_MAILER_ARGS', `TCP $h {self.relay_port}')dnl
define(`ESMTP_MAILER_ARGS', `TCP $h {self.relay_port}')dnl
define(`SMTP_MAILER_ARGS', `TCP $h {self.relay_port}')dnl
FEATURE(`nocanonify')dnl
FEATURE(`accept_unresolvable_domains')dnl
FEATURE(`no_default_msa')dnl
DAEMON_OPTIONS(`Family=inet, Addr=127.0.0.1, Port={self.smtp_port}, Name=MTA')dnl
dnl --- contrib/sendmail/mtaplugin.m4 ---
{snippet}dnl --- end ---
MAILER(`smtp')dnl
"""

    def write_config(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        for d in ("mqueue", "clientmqueue"):
            (self.root / d).mkdir(exist_ok=True)
            os.chmod(self.root / d, 0o700)
        for name, text in (
            ("aliases", ""),
            ("helpfile", ""),
            ("local-host-names", ""),
            ("relay-domains", ""),
            ("service.switch", "hosts files\naliases files\n"),
        ):
            (self.root / name).write_text(text)
            os.chmod(self.root / name, 0o644)
        (self.root / "statistics").touch()
        (self.root / "sendmail.mc").write_text(self.mc_text())
        cfdir = self.tree / "usr/share/sendmail/cf"
        proc = subprocess.run(
            [str(self.tree / "usr/bin/m4"), f"-D_CF_DIR_={cfdir}/", f"{cfdir}/m4/cf.m4",
             str(self.root / "sendmail.mc")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if proc.returncode != 0 or not proc.stdout:
            raise LabError(f"m4 failed: {proc.stderr}")
        self.cf.write_text(proc.stdout)
        os.chmod(self.cf, 0o644)

    def wrapped(self, *args: str) -> list[str]:
        """``sendmail ARGS`` in a UTS namespace whose host name is qualified: Sendmail
        sleeps a minute, again and again, while it cannot qualify the host's name ("My
        unqualified host name (vm) unknown; sleeping for retry")."""
        command = " ".join(shlex.quote(a) for a in (str(self.binary), *args))
        return [
            "unshare",
            "--uts",
            "--",
            "sh",
            "-c",
            f"hostname {self.name}.test && exec {command}",
        ]

    def start(self) -> PrivateSendmail:
        self.require_root()
        self.write_config()
        with open(self.maillog, "ab") as log:
            self.spawn(
                self.wrapped("-C", str(self.cf), "-bD", "-q5s"),
                self.smtp_port,
                log,
                subprocess.STDOUT,
            )
        return self

    def log(self) -> str:
        try:
            return self.maillog.read_text(errors="replace")
        except FileNotFoundError:
            return ""


@dataclass
class SendmailLab(LabBase):
    """SMTP sink ← private Sendmail ← ``mtaplugin serve`` (the milter, the lookup server
    for the access map, the worker submitting to the re-injection listener)."""

    root: Path
    database_url: str
    name: str = "sendmail-lab"
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        self.sockets = self.root / "run"
        self.sink = Sink(free_port())
        self.sendmail = PrivateSendmail(
            root=self.root / "sendmail",
            smtp_port=free_port(),
            reinject_port=free_port(),
            relay_port=self.sink.port,
            milter_socket=f"unix:{self.sockets}/milter.sock",
            lookup_socket=f"unix:{self.sockets}/lookup.sock",
            name=self.name,
        )
        self.api_port = free_port()
        self.runner = MtapluginProcess(self.root)
        self.smtp_timeout = 60.0
        # From 127.0.0.2: Sendmail lets the local host relay anywhere, so a post from
        # 127.0.0.1 would not show that the list domains come from the access map.
        self.source_host = "127.0.0.2"

    @property
    def smtp_port(self) -> int:
        return self.sendmail.smtp_port

    def start(self) -> SendmailLab:
        self.sink.start()
        self.sockets.mkdir(exist_ok=True)
        os.chmod(self.sockets, 0o755)
        env = dict(os.environ)
        env.update(
            {
                "MTAPLUGIN_DATABASE_URL": self.database_url,
                "MTAPLUGIN_SITE_VAR_DIR": str(self.sockets),
                "MTAPLUGIN_DATABASE_TIMEOUT": "1",
                "MTAPLUGIN_MILTER_SOCKET": f"unix:{self.sockets}/milter.sock",
                "MTAPLUGIN_LOOKUP_SOCKET": f"unix:{self.sockets}/lookup.sock",
                "MTAPLUGIN_OUTBOX_PORT": str(self.sendmail.reinject_port),
                "MTAPLUGIN_API_LISTEN": f"127.0.0.1:{self.api_port}",
                "MTAPLUGIN_API_WORKERS": "1",
            }
        )
        env.update(self.env)
        self.runner.start(
            ["serve"],
            env,
            lambda: all((self.sockets / s).exists() for s in ("milter.sock", "lookup.sock")),
            LabError,
        )
        self.sendmail.start()
        return self

    def stop(self) -> None:
        self.sendmail.stop()
        self.runner.stop()
        self.sink.stop()

    def mta_log(self) -> str:
        return self.sendmail.log()

    def prepare(self, message: bytes) -> bytes:
        # Sendmail refuses bare LF line ends (since the SMTP smuggling fixes); smtplib
        # sends bytes as they are.
        return crlf(message)
