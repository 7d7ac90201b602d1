"""Real mtaplugin processes to kill: a private Postfix lab of the fault tests' own (never the
integration tests' shared labs: its processes are killed here), the parts of ``mtaplugin
serve`` found by their process ids, a client that offers posts as a sending MTA does (again
after a 4xx or a broken connection, until a 250 or a 5xx), and the counts of the copies
that reached the sink.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import smtplib
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.manage import domains
from mtaplugin.testing import wait_for
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.sink import Sink
from tests.conftest import fresh_database
from tests.faults.ledger import RUNS, FaultRow

DOMAIN = "lists.test"
#: pytest-timeout for a fault test (the suite's 300 s is for one run of each fault)
SLOW = pytest.mark.timeout(300 + 60 * RUNS)
SECRET = "fault-secret-0123456789abcdef0123456789"


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the fault tests start a private Postfix: run them as root")


def backend_of(url: str) -> str:
    return url.split(":", 1)[0].split("+", 1)[0]


def lab_database(request: pytest.FixtureRequest, lab_root: Path, backend: str) -> str:
    """A fresh, migrated database with the list domain; its URL."""
    url = fresh_database(request, backend, lab_root)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, DOMAIN, "fault tests")
    engine.dispose()
    return url


def fault_lab(root: Path, url: str, dns: DnsServer, debian: bool = False, **env: str) -> Lab:
    """A private Postfix wired to ``mtaplugin serve`` (not started).  ``debian``: Debian's
    stock Postfix with contrib/postfix as shipped (the milter's ``default_action=accept``,
    list mail no milter decided waits for the LMTP front end); otherwise the plain lab,
    where a milter that cannot answer makes Postfix answer 4xx (``default_action=tempfail``)."""
    if debian and url.startswith("sqlite:///"):
        # (as the integration labs do: every part may open the file and its journal)
        path = Path(url[len("sqlite:///") :])
        os.chmod(path.parent, 0o777)
        os.chmod(path, 0o666)
    return Lab(
        root=root,
        database_url=url,
        command=("serve",),
        name=root.name,
        env={"MTAPLUGIN_SITE_SECRET_KEY": SECRET, **dns.environ(), **env},
        debian=debian,
    )


# --- the parts of ``mtaplugin serve`` ---------------------------------------------------


def children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for tid in tasks:
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except (FileNotFoundError, ProcessLookupError):
        return []


def part_pid(lab: Lab, part: str) -> int | None:
    """The process id of ``part`` (milter, lookup, api, worker) under the lab's serve."""
    assert lab.process is not None
    for child in children(lab.process.pid):
        args = cmdline(child)
        if args and args[-1] == part:
            return child
    return None


def kill_part(lab: Lab, part: str) -> int:
    """SIGKILL ``part``; its process id."""
    pid = part_pid(lab, part)
    assert pid is not None, f"no {part} running\n{lab.log()[-3000:]}"
    os.kill(pid, signal.SIGKILL)
    return pid


def wait_restarted(lab: Lab, part: str, old: int, timeout: float = 90) -> int:
    """Wait until serve runs ``part`` again in another process; its id."""

    def again() -> int | None:
        pid = part_pid(lab, part)
        return pid if pid is not None and pid != old else None

    try:
        found = wait_for(again, timeout=timeout, interval=0.1)
    except TimeoutError:
        raise AssertionError(f"{part} not restarted\n{lab.log()[-3000:]}") from None
    assert isinstance(found, int)
    return found


# --- the sending MTA --------------------------------------------------------------------


@dataclass
class Offer:
    """What one post got when offered: the replies, in order."""

    marker: str
    replies: list[int] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return bool(self.replies) and self.replies[-1] == 250


def post(marker: str, sender: str, to: str, subject: str = "fault") -> bytes:
    return (
        f"From: {sender}\r\nTo: {to}\r\nSubject: {subject} {marker}\r\n"
        f"Message-ID: <{marker}@client.test>\r\n\r\nbody {marker}\r\n"
    ).encode()


def offer_once(
    port: int,
    sender: str,
    to: str,
    message: bytes,
    at_dot: Callable[[], object] | None = None,
    timeout: float = 30,
) -> int:
    """One SMTP transaction; the final reply code (0: the connection broke).  ``at_dot``
    is called when the whole message and its final dot are sent: end of data begins."""
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=timeout) as smtp:
            smtp.ehlo("client.test")
            for code, _text in (smtp.mail(sender), smtp.rcpt(to)):
                if code != 250:
                    return code
            code, _text = smtp.docmd("DATA")
            if code != 354:
                return code
            assert message.endswith(b"\r\n") and b"\n." not in message
            smtp.send(message + b".\r\n")
            if at_dot is not None:
                at_dot()
            code, _text = smtp.getreply()
            return code
    except (smtplib.SMTPException, OSError):
        return 0


def offer(
    port: int,
    sender: str,
    to: str,
    marker: str,
    row: FaultRow,
    deadline: float = 180,
    pause: float = 0.5,
    at_dot: Callable[[], object] | None = None,
) -> Offer:
    """Offer the post until a 250 or a 5xx, as a sending MTA would (again after a 4xx or a
    broken connection); counted in ``row``."""
    got = Offer(marker)
    row.offered += 1
    message = post(marker, sender, to)
    end = time.monotonic() + deadline
    while True:
        code = offer_once(port, sender, to, message, at_dot)
        at_dot = None  # (the first attempt only)
        got.replies.append(code)
        if code == 250:
            row.accepted += 1
            return got
        if 500 <= code < 600:
            row.refused += 1
            return got
        row.deferred += 1
        if time.monotonic() > end:
            raise AssertionError(f"{marker}: still not accepted after {deadline} s: {got.replies}")
        time.sleep(pause)


# --- what reached the sink --------------------------------------------------------------


MARKER = re.compile(rb"^body (\S+)", re.MULTILINE)


def copies(sink: Sink, markers: Iterable[str]) -> Counter[tuple[str, str]]:
    """(marker, recipient) → how many copies of those posts the sink got."""
    wanted = set(markers)
    got: Counter[tuple[str, str]] = Counter()
    for msg in list(sink.messages):
        found = MARKER.search(msg.data)
        if found and (marker := found.group(1).decode()) in wanted:
            got.update((marker, r) for r in msg.recipients)
    return got


def settle(
    sink: Sink, expected: set[tuple[str, str]], timeout: float = 120
) -> Counter[tuple[str, str]]:
    """Wait until every expected (marker, recipient) copy arrived (or the timeout); the
    copies then, after a short while for late duplicates."""
    markers = {m for m, _r in expected}
    with contextlib.suppress(TimeoutError):
        wait_for(lambda: expected <= set(copies(sink, markers)), timeout=timeout, interval=0.2)
    time.sleep(1.0)
    return copies(sink, markers)


def count_into(
    row: FaultRow, expected: set[tuple[str, str]], got: Mapping[tuple[str, str], int]
) -> None:
    row.delivered = len(expected & set(got))
    row.duplicates = sum(n - 1 for pair, n in got.items() if pair in expected)
    row.lost = len(expected - set(got))


def kill_workers_while(
    argv: list[str],
    env: Mapping[str, str],
    done: Callable[[], int],
    total: int,
    rng: random.Random,
    settle: float,
) -> list[int]:
    """Start ``argv`` (a worker) :data:`~tests.faults.ledger.RUNS` times, each killed with
    SIGKILL a random moment (up to ``settle`` s) after it took ``done()`` a random step
    further towards ``total``; what ``done()`` read at each kill."""
    at_kill: list[int] = []
    for run in range(RUNS):
        before = done()
        left = total - before
        if left <= 0:
            break
        share = max(1, left // (RUNS - run + 1))
        target = before + rng.randint(1, share)
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

        def reached(p: subprocess.Popen[bytes] = proc, n: int = target) -> bool:
            return p.poll() is not None or done() >= n

        wait_for(reached, timeout=120, interval=0.01)
        time.sleep(rng.uniform(0, settle))  # inside the next batch, or its commit
        assert proc.poll() is None, proc.communicate()[0].decode(errors="replace")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        at_kill.append(done())
    return at_kill
