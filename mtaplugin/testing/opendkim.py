"""OpenDKIM, the signing milter Mailman's users put on its outgoing path, run from Debian's
package files for the benches that compare with it (never a dependency of mtaplugin).

``opendkim`` and the libraries Debian 12 lacks for it are fetched with ``apt-get
download`` and extracted once under :data:`mtaplugin.testing.debpkg.CACHE` (as
:mod:`mtaplugin.testing.debpkg` does for Exim and Sendmail); nothing is installed into
the system.  :class:`OpenDKIM` runs one private signer in the foreground: a fresh RSA key
(``openssl genrsa``), a minimal ``opendkim.conf`` in signing mode for one domain, and a
milter socket (``unix:`` by default, or ``inet:PORT@127.0.0.1``).  Every message it sees
is signed with ``d=DOMAIN``, whatever its From: (a list host's signing table ``*``)::

    with OpenDKIM(root, domain="lists.example", selector="bench") as signer:
        ...  # smtpd_milters = signer.milter  (a Postfix milter address)

The public key's TXT record is in ``signer.dns_record`` for a test's own DNS server.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from mtaplugin.testing.debpkg import extract, library_path

#: opendkim and the shared libraries it needs that a Debian 12 system without it lacks
PACKAGES = [
    "opendkim",
    "libopendkim11",
    "libopendbx1",
    "libmemcached11",
    "libhashkit2",
    "liblua5.3-0",
    "libvbr2",
    "librbl1",
]
BINARY = "usr/sbin/opendkim"


class OpenDKIMError(RuntimeError):
    pass


def opendkim_root() -> Path:
    """The private tree with ``usr/sbin/opendkim`` (extracted on first use; needs root)."""
    return extract("opendkim", PACKAGES, BINARY, {})


def opendkim_env(root: Path) -> dict[str, str]:
    return dict(os.environ, LD_LIBRARY_PATH=library_path(root))


CONF = """\
# A private OpenDKIM signer (mtaplugin.testing.opendkim)
Mode                    s
# every message is signed with d=DOMAIN, whatever its From: (what a list's host does)
KeyTable                file:{key_table}
SigningTable            refile:{signing_table}
Canonicalization        relaxed/simple
SignatureAlgorithm      rsa-sha256
Socket                  {socket}
PidFile                 {pid}
UMask                   000
Syslog                  no
LogWhy                  no
RequireSafeKeys         no
AutoRestart             no
Background              no
# sign every message, whoever the client (the bench's Postfix runs on loopback)
InternalHosts           0.0.0.0/0
"""


@dataclass(eq=False)
class OpenDKIM:
    """One private OpenDKIM signing milter for ``domain``."""

    root: Path
    domain: str
    selector: str = "bench"
    bits: int = 2048
    port: int | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def socket_path(self) -> Path:
        return self.root / "opendkim.sock"

    @property
    def milter(self) -> str:
        """The address Postfix's ``smtpd_milters`` / ``non_smtpd_milters`` take."""
        if self.port is not None:
            return f"inet:127.0.0.1:{self.port}"
        return f"unix:{self.socket_path}"

    @property
    def key_file(self) -> Path:
        return self.root / f"{self.selector}.private"

    @property
    def dns_record(self) -> str:
        """The TXT record's text at ``SELECTOR._domainkey.DOMAIN``."""
        out = subprocess.run(
            ["openssl", "rsa", "-in", str(self.key_file), "-pubout", "-outform", "DER"],
            capture_output=True,
            check=True,
        ).stdout
        import base64

        return f"v=DKIM1; k=rsa; p={base64.b64encode(out).decode()}"

    def log(self) -> str:
        try:
            return (self.root / "opendkim.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def start(self, timeout: float = 30.0) -> OpenDKIM:
        tree = opendkim_root()
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.key_file.exists():
            subprocess.run(
                ["openssl", "genrsa", "-out", str(self.key_file), str(self.bits)],
                capture_output=True,
                check=True,
            )
            os.chmod(self.key_file, 0o600)
        socket = (
            f"inet:{self.port}@127.0.0.1" if self.port is not None else f"local:{self.socket_path}"
        )
        self.socket_path.unlink(missing_ok=True)
        key_name = f"{self.selector}._domainkey.{self.domain}"
        key_table = self.root / "key.table"
        key_table.write_text(f"{key_name} {self.domain}:{self.selector}:{self.key_file}\n")
        signing_table = self.root / "signing.table"
        signing_table.write_text(f"* {key_name}\n")
        conf = self.root / "opendkim.conf"
        conf.write_text(
            CONF.format(
                key_table=key_table,
                signing_table=signing_table,
                socket=socket,
                pid=self.root / "opendkim.pid",
            )
        )
        log = open(self.root / "opendkim.log", "ab")  # noqa: SIM115 - owned by the child
        self.process = subprocess.Popen(
            [str(tree / BINARY), "-f", "-x", str(conf)],
            env=opendkim_env(tree),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while not self._listening():
            if self.process.poll() is not None:
                raise OpenDKIMError(f"opendkim exited: {self.log()[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise OpenDKIMError(f"opendkim not listening after {timeout} s: {self.log()}")
            time.sleep(0.05)
        return self

    def _listening(self) -> bool:
        if self.port is None:
            return self.socket_path.exists()
        import socket

        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self) -> None:
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def pids(self) -> list[int]:
        return [self.process.pid] if self.process is not None else []

    def __enter__(self) -> OpenDKIM:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
