"""Latency for the end-to-end benches, measured where the members' server sees the copy.

``mtaplugin.testing.counting_sink`` (a process of its own) writes one line per transaction
with the time it took the message and the tag of its ``Message-ID: <vsm-TAG@...>``;
``Events`` reads that file as it grows.  ``LatencySink`` runs one such sink for a domain
of its own (``LATENCY_DOMAIN``, routed to it by a transport map), so that the lone posts
of a bench reach a sink that timestamps them while its bulk rounds go to Postfix's
``smtp-sink``.  ``lone_post`` sends one message in one SMTP session and returns the
seconds from the client's connect to the sink's time for its first copy: what a poster
waits, the milter's work before the 250 included, until the first member has the post.
"""

from __future__ import annotations

import smtplib
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mtaplugin.testing import GrowingFile, free_port, wait_for_port

#: the members of this domain are delivered to the LatencySink (see ``transport``)
LATENCY_DOMAIN = "latency.bench"


class Events:
    """The counting sink's events file, read as it grows: copies per tag and the time of
    each tag's first copy."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = GrowingFile(path)
        self.copies: dict[str, int] = {}
        self.first: dict[str, float] = {}
        self.last_time = 0.0
        self.total = 0

    def poll(self) -> None:
        for line in self.file.new_lines().splitlines():
            t_s, n_s, tag = line.decode().split()
            t, n = float(t_s), int(n_s)
            self.copies[tag] = self.copies.get(tag, 0) + n
            self.first.setdefault(tag, t)
            self.last_time = max(self.last_time, t)
            self.total += n

    def wait(self, tags: Sequence[str], expected: int, timeout: float) -> float:
        """Wait until every tag has ``expected`` copies; the time of the last copy."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            if all(self.copies.get(t, 0) >= expected for t in tags):
                return self.last_time
            if time.monotonic() > deadline:
                short = {t: self.copies.get(t, 0) for t in tags if self.copies.get(t, 0) < expected}
                raise TimeoutError(f"copies missing after {timeout} s: {list(short.items())[:5]}")
            time.sleep(0.01)

    def settle(self, tag: str, timeout: float, quiet: float = 4.0) -> int:
        """Wait for the first copy of ``tag``, then until no copy came for ``quiet`` s."""
        deadline = time.monotonic() + timeout
        seen, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            self.poll()
            n = self.copies.get(tag, 0)
            if n != seen:
                seen, since = n, time.monotonic()
            elif n > 0 and time.monotonic() - since > quiet:
                return n
            time.sleep(0.1)
        raise TimeoutError(f"no copies of {tag} within {timeout} s")


class LatencySink:
    """A counting sink on a free port, for the mail of ``LATENCY_DOMAIN``."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.events = Events(root / "latency.events")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def transport(self) -> str:
        """The Postfix ``transport_maps`` value that sends ``LATENCY_DOMAIN`` here."""
        return f"inline:{{ {LATENCY_DOMAIN}=smtp:[127.0.0.1]:{self.port} }}"

    def __enter__(self) -> LatencySink:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mtaplugin.testing.counting_sink", str(self.port),
             str(self.events.path)],
            start_new_session=True,
        )  # fmt: skip
        wait_for_port(self.port)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)


def message(sender: str, rcpt: str, tag: str, size: int = 2000) -> bytes:
    """A plain post of about ``size`` bytes whose Message-ID carries ``tag``."""
    head = (
        f"From: <{sender}>\r\nTo: <{rcpt}>\r\nSubject: A typical post\r\n"
        f"Message-ID: <vsm-{tag}@{sender.rpartition('@')[2]}>\r\n"
        f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}\r\n"
        "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n"
    )
    line = "A line of a typical short post, about the list's subject, nothing more.\r\n"
    return (head + line * max(1, (size - len(head)) // len(line))).encode()


def lone_post(
    events: Events, port: int, sender: str, rcpt: str, tag: str, timeout: float = 120.0
) -> float:
    """Seconds from connecting to ``port`` to the first copy of one post at the sink
    (``tag``: ``RUN-N``, letters and digits, a dash, digits)."""
    data = message(sender, rcpt, tag)
    start = time.time()
    with smtplib.SMTP("127.0.0.1", port, timeout=timeout) as smtp:
        smtp.sendmail(sender, [rcpt], data)
    events.wait([tag], 1, timeout)
    return events.first[tag] - start
