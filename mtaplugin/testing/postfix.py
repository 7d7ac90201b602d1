"""A private Postfix instance on 127.0.0.1, built from mtaplugin's own contrib snippets.

Layout under ``root``::

    conf/      main.cf, master.cf, mtaplugin-domains.*.cf   (postfix -c root/conf)
    queue/     queue_directory
    data/      data_directory (owned by postfix)
    maillog    the log (there is no syslogd here)

``main.cf`` is a loopback-only base (every recipient relayed to the sink at
``relay_port``) followed by ``contrib/postfix/main.cf``; ``master.cf`` is the posting
listener followed by ``contrib/postfix/master.cf`` and Postfix's internal services.  The
contrib files are used with their paths and ports replaced, and without the lines that
keep an mtaplugin outage to list mail (``OUTAGE_LINES``): here the milter decides alone,
with every service unchrooted.

``debian=True`` is the other instance: Debian's stock ``main.cf.debian`` and
``master.cf.dist`` (smtpd, cleanup, trivial-rewrite, lmtp chrooted to the queue directory)
followed by contrib/postfix/main.cf as it is, but for the directory of the list-domain
tables; the sockets are in ``queue/mtaplugin/``, named relative to the queue directory,
and the files Debian copies into the chroot are copied.  Must run as root (``postfix
start`` refuses otherwise).  See ../shared/reference/postfix-private-instance.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import make_url

CONTRIB = Path(__file__).resolve().parents[2] / "contrib" / "postfix"

# Packaged defaults in the contrib files, replaced by the instance's own.
DEFAULT_SOCKET = "unix:mtaplugin/milter.sock"
DEFAULT_REINJECT = "127.0.0.1:10026"
DEFAULT_LOOKUP = "hash:/var/lib/mtaplugin/postfix/domains"
DEFAULT_TABLES = "/var/lib/mtaplugin/postfix"
#: the lines of contrib/postfix/main.cf that keep an outage to list mail (the Debian
#: instance uses them; the plain one decides relaying from the list database itself)
OUTAGE_LINES = (
    "smtpd_restriction_classes",
    "mtaplugin_list_mail",
    "smtpd_recipient_restrictions",
    "transport_maps",
)
#: Debian's stock configuration (the postfix package)
DEBIAN = Path("/usr/share/postfix")
#: what Debian's postfix start copies into the chroot (/usr/lib/postfix/configure-instance.sh)
CHROOT_FILES = (
    "etc/localtime",
    "etc/services",
    "etc/resolv.conf",
    "etc/hosts",
    "etc/host.conf",
    "etc/nsswitch.conf",
)

INTERNAL_SERVICES = """\
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
"""


def _set_in(line: str, config: str) -> bool:
    """Whether ``config`` already sets the parameter ``line`` sets."""
    key = line.partition("=")[0].strip()
    return bool(key) and any(
        other.partition("=")[0].strip() == key for other in config.splitlines()
    )


class PostfixError(RuntimeError):
    pass


@dataclass
class PrivatePostfix:
    root: Path
    #: the posting listener (with the milter)
    smtp_port: int
    #: the re-injection listener (no milter), from contrib/postfix/master.cf
    reinject_port: int
    #: where every delivery goes (the sink)
    relay_port: int
    milter_socket: str
    database_url: str
    name: str = "mtaplugin-lab"
    #: who may relay through the posting listener.  Tests leave loopback out, so that a
    #: post is accepted only because relay_domains (the list database) says so.
    mynetworks: str = "127.0.0.2/32"
    #: extra relay domains before the list lookup (for pass-through recipients)
    extra_relay_domains: tuple[str, ...] = ()
    extra_main: dict[str, str] = field(default_factory=dict)
    #: mtaplugin's socketmap lookup server (contrib/postfix/main.cf); "" uses the
    #: contrib sqlite:/pgsql: table over the database instead
    lookup_socket: str = ""
    #: Debian's stock main.cf and master.cf (chroot on) with contrib/postfix/main.cf added
    #: as it is: the sockets under the queue directory, the list-domain tables in
    #: ``tables_dir`` (written by mtaplugin), list mail deferred while mtaplugin is down
    debian: bool = False
    tables_dir: str = ""

    @property
    def conf(self) -> Path:
        return self.root / "conf"

    @property
    def maillog(self) -> Path:
        return self.root / "maillog"

    @property
    def lookup_table_reads_database(self) -> bool:
        """Postfix reads the list database itself (contrib's sqlite: table over a SQLite
        file): neither the lookup server nor the tables mtaplugin writes (Debian's lab)."""
        backend = make_url(self.database_url).get_backend_name()
        return not self.debian and not self.lookup_socket and backend == "sqlite"

    def _lookup_file(self) -> str:
        url = make_url(self.database_url)
        if url.get_backend_name() == "sqlite":
            text = (CONTRIB / "mtaplugin-domains.sqlite.cf").read_text()
            text = text.replace("/var/lib/mtaplugin/mtaplugin.db", str(url.database))
            (self.conf / "mtaplugin-domains.sqlite.cf").write_text(text)
            return f"sqlite:{self.conf}/mtaplugin-domains.sqlite.cf"
        text = (CONTRIB / "mtaplugin-domains.pgsql.cf").read_text()
        text = (
            text.replace("127.0.0.1:5432", f"{url.host or '127.0.0.1'}:{url.port or 5432}")
            .replace("user = mtaplugin_postfix", f"user = {url.username or 'postgres'}")
            .replace("password = change-me", f"password = {url.password or ''}")
            .replace("dbname = mtaplugin", f"dbname = {url.database}")
        )
        (self.conf / "mtaplugin-domains.pgsql.cf").write_text(text)
        return f"pgsql:{self.conf}/mtaplugin-domains.pgsql.cf"

    @property
    def queue(self) -> Path:
        return self.root / "queue"

    def write_config(self) -> None:
        for d in (self.root, self.conf, self.root / "queue"):
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o755)
        data = self.root / "data"
        data.mkdir(exist_ok=True)
        shutil.chown(data, "postfix", "postfix")
        os.chmod(data, 0o700)
        base = f"""\
# Private instance "{self.name}": loopback only, every delivery relayed to the sink.
compatibility_level = 3.6
queue_directory = {self.root}/queue
data_directory = {data}
maillog_file = {self.maillog}
maillog_file_prefixes = {self.root}
syslog_name = {self.name}
myhostname = {self.name}.test
mydomain = {self.name}.test
myorigin = $myhostname
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = {self.mynetworks}
mydestination =
local_recipient_maps =
alias_maps =
alias_database =
relayhost = [127.0.0.1]:{self.relay_port}
smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
smtpd_banner = $myhostname ESMTP {self.name}
biff = no
delay_warning_time = 0
queue_run_delay = 5s
minimal_backoff_time = 5s
maximal_backoff_time = 10s
maximal_queue_lifetime = 1h
bounce_queue_lifetime = 1h
smtp_connection_cache_on_demand = yes
"""
        if self.debian:
            self._write_debian(base)
            return
        snippet = (CONTRIB / "main.cf").read_text()
        snippet = "".join(
            line for line in snippet.splitlines(keepends=True) if not line.startswith(OUTAGE_LINES)
        )
        lookup = (
            f"socketmap:unix:{self.lookup_socket}:domains"
            if self.lookup_socket
            else self._lookup_file()
        )
        relay = ", ".join([*self.extra_relay_domains, lookup])
        snippet = snippet.replace(DEFAULT_LOOKUP, relay).replace(DEFAULT_SOCKET, self.milter_socket)
        # (the milter alone decides here: no transport to wait in while it is down)
        snippet = snippet.replace("default_action=accept", "default_action=tempfail")
        extra = "".join(f"{k} = {v}\n" for k, v in self.extra_main.items())
        (self.conf / "main.cf").write_text(
            base + "\n# --- contrib/postfix/main.cf ---\n" + snippet + extra
        )
        listener = f"""\
# The posting listener: main.cf's smtpd_milters apply.
127.0.0.1:{self.smtp_port} inet n - n - - smtpd
  -o syslog_name={self.name}/smtpd
"""
        master_snippet = (
            (CONTRIB / "master.cf")
            .read_text()
            .replace(DEFAULT_REINJECT, f"127.0.0.1:{self.reinject_port}")
        )
        (self.conf / "master.cf").write_text(
            listener
            + "\n# --- contrib/postfix/master.cf ---\n"
            + master_snippet
            + "\n# --- internal services ---\n"
            + INTERNAL_SERVICES
        )

    def _write_debian(self, base: str) -> None:
        """Debian's main.cf.debian (what the package's postinst starts main.cf from), the
        instance's own paths and ports, then contrib/postfix/main.cf with only the tables'
        directory replaced; Debian's master.cf with its public smtpd (chroot on) moved to
        the lab's port, then contrib/postfix/master.cf.  The files a chrooted Postfix needs
        are copied into the queue directory, as Debian's ``postfix start`` does."""
        stock = (DEBIAN / "main.cf.debian").read_text()
        snippet = (CONTRIB / "main.cf").read_text()
        relay = ", ".join([*self.extra_relay_domains, DEFAULT_LOOKUP])
        snippet = snippet.replace(f"relay_domains = {DEFAULT_LOOKUP}", f"relay_domains = {relay}")
        snippet = snippet.replace(DEFAULT_TABLES, self.tables_dir)
        extra = "".join(f"{k} = {v}\n" for k, v in self.extra_main.items())
        (self.conf / "main.cf").write_text(
            "# --- /usr/share/postfix/main.cf.debian ---\n"
            + stock
            + "\n# --- as Debian's postinst adds, then the private instance's own ---\n"
            + "recipient_delimiter = +\nmailbox_size_limit = 0\n"
            + "".join(line for line in base.splitlines(keepends=True) if not _set_in(line, stock))
            + "\n# --- contrib/postfix/main.cf ---\n"
            + snippet
            + extra
        )
        master = (DEBIAN / "master.cf.dist").read_text()
        public = "smtp      inet  n       -       y       -       -       smtpd"
        assert public in master, "Debian's master.cf changed: no chrooted smtpd"
        master = master.replace(
            public,
            f"127.0.0.1:{self.smtp_port} inet n - y - - smtpd\n  -o syslog_name={self.name}/smtpd",
        )
        master_snippet = (
            (CONTRIB / "master.cf")
            .read_text()
            .replace(DEFAULT_REINJECT, f"127.0.0.1:{self.reinject_port}")
        )
        (self.conf / "master.cf").write_text(
            master + "\n# --- contrib/postfix/master.cf ---\n" + master_snippet
        )
        for name in CHROOT_FILES:
            source, target = Path("/") / name, self.queue / name
            if source.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
                os.chmod(target, 0o644)
        # the sockets' directory (docs/postfix.md: install -d -o mtaplugin -g postfix)
        sockets = self.queue / "mtaplugin"
        sockets.mkdir(exist_ok=True)
        shutil.chown(sockets, group="postfix")
        os.chmod(sockets, 0o750)

    def _postfix(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["postfix", "-c", str(self.conf), *args], capture_output=True, text=True, timeout=60
        )
        if check and proc.returncode != 0:
            raise PostfixError(
                f"postfix {' '.join(args)} failed ({proc.returncode}): "
                f"{proc.stdout}{proc.stderr}\n--- maillog ---\n{self.log()[-3000:]}"
            )
        return proc

    def start(self) -> PrivatePostfix:
        if os.geteuid() != 0:
            raise PostfixError("a private Postfix instance must be started as root")
        if shutil.which("postfix") is None:
            raise PostfixError("postfix is not installed (apt-get install postfix postfix-sqlite)")
        self.write_config()
        self._postfix("check")
        self._postfix("start")
        from mtaplugin.testing import wait_for_port

        wait_for_port(self.smtp_port)
        wait_for_port(self.reinject_port)
        return self

    def running(self) -> bool:
        return self._postfix("status", check=False).returncode == 0

    def stop(self) -> None:
        self._postfix("stop", check=False)
        deadline = time.monotonic() + 10
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.running():
            self._postfix("abort", check=False)

    def log(self) -> str:
        try:
            return self.maillog.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def queue_size(self) -> int:
        proc = subprocess.run(
            ["postqueue", "-c", str(self.conf), "-j"], capture_output=True, text=True, timeout=30
        )
        return len([line for line in proc.stdout.splitlines() if line.strip()])
