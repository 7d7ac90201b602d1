"""A whole mail path on loopback: SMTP sink ← private Postfix ← mtaplugin milter.

Used by the integration tests, the benchmarks and ``make demo``, so that all three run the
same parts a mail admin runs.  ``Lab.start()`` brings up, in order, the sink standing in
for the members' servers, the mtaplugin process (``mtaplugin milter`` or ``mtaplugin
serve``) on a unix socket, and a private Postfix built from ``contrib/postfix/``.
``debian=True``: that Postfix is Debian's stock configuration, chrooted, and mtaplugin's
sockets are in its queue directory (docs/postfix.md); ``stop_mtaplugin`` and
``start_mtaplugin`` make an mtaplugin outage.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mtaplugin.testing import free_port
from mtaplugin.testing.mta import LabBase, Refused, send
from mtaplugin.testing.postfix import PrivatePostfix
from mtaplugin.testing.process import MtapluginProcess
from mtaplugin.testing.sink import Sink

__all__ = ["Lab", "Refused", "send"]


@dataclass
class Lab(LabBase):
    root: Path
    database_url: str
    #: the mtaplugin sub-command: "serve" (milter, API and worker) or just "milter"
    command: tuple[str, ...] = ("serve",)
    maildir: Path | None = None
    extra_relay_domains: tuple[str, ...] = ()
    mynetworks: str = "127.0.0.2/32"
    env: dict[str, str] = field(default_factory=dict)
    name: str = "mtaplugin-lab"
    #: fixed ports (the demo prints them); 0 picks free ones
    smtp_port_wanted: int = 0
    reinject_port_wanted: int = 0
    #: deliver to an SMTP server already listening there (the benchmarks use Postfix's
    #: smtp-sink) instead of starting the aiosmtpd sink
    external_sink_port: int = 0
    #: Postfix from Debian's stock main.cf/master.cf (chroot on) plus contrib/postfix as it
    #: is: the sockets under the queue directory, the list-domain tables written by
    #: mtaplugin, list mail decided by the LMTP front end when no milter did
    debian: bool = False

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        sockets = self.root / "postfix" / "queue" / "mtaplugin" if self.debian else self.root
        self.socket = sockets / "milter.sock"
        self.lookup_socket = sockets / "lookup.sock"
        self.lmtp_socket = sockets / "lmtp.sock"
        self.tables = self.root / "tables"
        self.sink = Sink(self.external_sink_port or free_port(), self.maildir)
        self.postfix = PrivatePostfix(
            root=self.root / "postfix",
            smtp_port=self.smtp_port_wanted or free_port(),
            reinject_port=self.reinject_port_wanted or free_port(),
            relay_port=self.sink.port,
            milter_socket=f"unix:{self.socket}",
            database_url=self.database_url,
            name=self.name,
            mynetworks=self.mynetworks,
            extra_relay_domains=self.extra_relay_domains,
            lookup_socket=str(self.lookup_socket) if "serve" in self.command else "",
            debian=self.debian,
            tables_dir=str(self.tables),
        )
        self.runner = MtapluginProcess(self.root)
        self.api_port = free_port()

    @property
    def smtp_port(self) -> int:
        return self.postfix.smtp_port

    def process_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "MTAPLUGIN_DATABASE_URL": self.database_url,
                # the lab's own state (a PostgreSQL database would put it in /var/lib)
                "MTAPLUGIN_SITE_VAR_DIR": str(self.root / "var"),
                "MTAPLUGIN_MILTER_SOCKET": f"unix:{self.socket}",
                "MTAPLUGIN_LOOKUP_SOCKET": f"unix:{self.lookup_socket}",
                "MTAPLUGIN_OUTBOX_PORT": str(self.postfix.reinject_port),
                # the re-injection listener (contrib/postfix/master.cf) takes XVERP
                "MTAPLUGIN_OUTBOX_XVERP": "true",
                # the web UI's posts (replies from the archive) go to the lab's smtpd
                "MTAPLUGIN_WEB_SUBMIT_PORT": str(self.postfix.smtp_port),
                "MTAPLUGIN_DATABASE_TIMEOUT": "1",
                "MTAPLUGIN_API_LISTEN": f"127.0.0.1:{self.api_port}",
                "MTAPLUGIN_API_WORKERS": "1",
                # Postfix's sqlite: table (no lookup server) is read by its unprivileged
                # user, who could not open a WAL database's -shm file (docs/postfix.md)
                "MTAPLUGIN_DATABASE_SQLITE_WAL": "false"
                if self.postfix.lookup_table_reads_database
                else "true",
            }
        )
        if self.debian:
            env.update(
                {
                    "MTAPLUGIN_LOOKUP_TABLES_DIR": str(self.tables),
                    "MTAPLUGIN_LOOKUP_TABLES_INTERVAL": "1",
                    "MTAPLUGIN_LMTP_ENABLED": "true",
                    "MTAPLUGIN_LMTP_SOCKET": f"unix:{self.lmtp_socket}",
                    # postmap reads the instance's main.cf
                    "MAIL_CONFIG": str(self.postfix.conf),
                }
            )
        env.update(self.env)
        # the links the web UI mails (sign-up, password reset) point at the lab's gunicorn
        env.setdefault("MTAPLUGIN_WEB_BASE_URL", f"http://{env['MTAPLUGIN_API_LISTEN']}")
        return env

    def _ready(self) -> bool:
        if not self.socket.exists():
            return False
        if "serve" not in self.command:
            return True
        if self.debian and not (
            self.lmtp_socket.exists() and (self.tables / "domains.db").exists()
        ):
            return False
        return self.lookup_socket.exists()

    def start(self) -> Lab:
        if not self.external_sink_port:
            self.sink.start()
        if self.debian:
            # the queue directory (and the sockets' directory in it) before mtaplugin
            self.postfix.write_config()
        self.start_mtaplugin()
        self.postfix.start()
        return self

    def start_mtaplugin(self) -> None:
        """Start the mtaplugin process and wait until Postfix can reach every part of it."""
        for sock in (self.socket, self.lookup_socket, self.lmtp_socket):
            if sock.exists():
                sock.unlink()
        self.runner.start(self.command, self.process_env(), self._ready)

    def stop_mtaplugin(self) -> None:
        """Stop the mtaplugin process (an outage; the MTA and the sink keep running)."""
        self.runner.stop(10)

    def stop(self) -> None:
        self.postfix.stop()
        self.runner.stop(10)
        if not self.external_sink_port:
            self.sink.stop()

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self.runner.process

    def mta_log(self) -> str:
        return self.postfix.log()
