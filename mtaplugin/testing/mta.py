"""What the three labs (Postfix, Exim, Sendmail) share: sending one SMTP transaction and
reading how it was refused, the lab skeleton (sink ← private MTA ← ``mtaplugin serve``) and
the private daemon run from an extracted Debian package tree.

A lab subclass makes ``sink``, ``runner`` and ``smtp_port`` and says how to start and stop
its MTA; everything else here is the same for every MTA.
"""

from __future__ import annotations

import os
import smtplib
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol, Self

from mtaplugin.testing import wait_for_port
from mtaplugin.testing.debpkg import extract, library_path
from mtaplugin.testing.process import MtapluginProcess, stop_group
from mtaplugin.testing.sink import Sink


class LabError(RuntimeError):
    """A private MTA or its mtaplugin could not be set up or started."""


@dataclass(frozen=True)
class Refused:
    """Where and how the MTA refused a transaction (``stage`` is mail, rcpt or data)."""

    stage: str
    code: int
    text: str


def send(
    smtp: smtplib.SMTP, mail_from: str, recipients: list[str], message: bytes
) -> Refused | None:
    """One SMTP transaction on ``smtp`` (closed afterwards).  Returns None when the MTA
    said 250 at end of data, or where it refused; a recipient refused at RCPT while others
    were accepted is reported as that refusal only when *every* recipient was refused."""
    with smtp:
        code, text = smtp.mail(mail_from)
        if code != 250:
            return Refused("mail", code, text.decode())
        accepted = 0
        first: Refused | None = None
        for rcpt in recipients:
            code, text = smtp.rcpt(rcpt)
            if code == 250:
                accepted += 1
            elif first is None:
                first = Refused("rcpt", code, text.decode())
        if not accepted:
            return first
        code, text = smtp.data(message)
        if code != 250:
            return Refused("data", code, text.decode())
        return None


class MtaLab(Protocol):
    """What a test needs from any lab: where the list database is, how to post, where the
    copies land and what the MTA and mtaplugin logged."""

    database_url: str
    sink: Sink

    def connect(self) -> smtplib.SMTP: ...

    def prepare(self, message: bytes) -> bytes: ...

    def send(self, mail_from: str, recipients: list[str], message: bytes) -> Refused | None: ...

    def log(self) -> str: ...

    def mta_log(self) -> str: ...


class LabBase:
    """The lab skeleton: the subclass sets ``sink``, ``runner`` and ``smtp_port`` and
    implements ``start``, ``stop`` and ``mta_log``."""

    database_url: str
    sink: Sink
    runner: MtapluginProcess
    #: seconds smtplib waits for an answer (Exim decides a whole post in the DATA ACL)
    smtp_timeout: float = 30.0
    #: the client's address ("" for any); Sendmail lets 127.0.0.1 relay anywhere
    source_host: str = ""

    @property
    def smtp_port(self) -> int:
        raise NotImplementedError

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def mta_log(self) -> str:
        raise NotImplementedError

    def log(self) -> str:
        """mtaplugin's log."""
        return self.runner.log()

    def prepare(self, message: bytes) -> bytes:
        """The message as this MTA wants it on the wire."""
        return message

    def connect(self) -> smtplib.SMTP:
        source = (self.source_host, 0) if self.source_host else None
        smtp = smtplib.SMTP(
            "127.0.0.1", self.smtp_port, timeout=self.smtp_timeout, source_address=source
        )
        smtp.ehlo("client.test")
        return smtp

    def send(self, mail_from: str, recipients: list[str], message: bytes) -> Refused | None:
        """One SMTP transaction (see :func:`send`)."""
        return send(self.connect(), mail_from, recipients, self.prepare(message))

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PrivateDaemon:
    """An MTA daemon run from an extracted package tree (``tree``), in a session of its own
    so that ``stop`` ends it with its children.  Must run as root."""

    #: how the subclass names the MTA in messages
    label: str = "MTA"
    tree: Path
    binary: Path
    process: subprocess.Popen[bytes] | None = None

    def unpack(
        self, name: str, packages: list[str], binary: str, libraries: dict[str, str]
    ) -> None:
        """The MTA's tree, extracted from Debian's packages the first time, and its binary."""
        self.tree = extract(name, packages, binary, libraries)
        self.binary = self.tree / binary

    def env(self) -> dict[str, str]:
        return dict(os.environ, LD_LIBRARY_PATH=library_path(self.tree))

    def log(self) -> str:
        raise NotImplementedError

    def require_root(self) -> None:
        if os.geteuid() != 0:
            raise LabError(f"a private {self.label} must be started as root")

    def spawn(
        self,
        args: Sequence[str],
        port: int,
        stdout: IO[bytes] | int,
        stderr: IO[bytes] | int,
    ) -> None:
        """Start ``args`` and wait until it listens on ``port``."""
        self.process = subprocess.Popen(
            list(args), env=self.env(), stdout=stdout, stderr=stderr, start_new_session=True
        )
        try:
            wait_for_port(port)
        except TimeoutError:
            raise LabError(f"{self.label} did not start: {self.log()[-3000:]}") from None

    def stop(self) -> None:
        stop_group(self.process, 10)
