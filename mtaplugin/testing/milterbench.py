"""What bench/milter_ceiling.py and bench/vs_opendkim.py share: the mtaplugin lab (a list
database with one 1-member list, ``mtaplugin serve`` and a private Postfix, Postfix's
``smtp-sink`` for the members' server), further private Postfix instances with another
milter on their posting listener (a no-op pymilter, OpenDKIM), rounds of ``smtp-source``
counted as accepted/s and delivered/s, and the JSON rows of ``bench/all.py``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import dkim as dkim_keys
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import Template
from mtaplugin.model.enums import ArchivePolicy, TemplateScope
from mtaplugin.testing import free_port, wait_for
from mtaplugin.testing.benchdb import machine_load, start_smtp_sink
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.postfix import PrivatePostfix
from mtaplugin.testing.process import stop_group

MEMBER = "member@bench.example"
LIST = "bench@lists.bench"
LIST_DOMAIN = "lists.bench"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options bench/milter_ceiling.py and bench/vs_opendkim.py share: the load
    (Postfix's smtp-source) and bench/all.py's ``--quick`` and ``--json``."""
    parser.add_argument("--messages", type=int, default=1000, help="per round")
    parser.add_argument("--clients", type=int, default=4, help="parallel SMTP sessions")
    parser.add_argument("--size", type=int, default=2000, help="message size in bytes")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each path")
    parser.add_argument("--quick", action="store_true", help="300 messages x 1 round")
    parser.add_argument("--json", default="", help="write the rows for bench/all.py here")


def parse_arguments(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """``parser.parse_args()``, ``--quick`` applied."""
    args = parser.parse_args()
    if args.quick:
        args.messages, args.rounds = 300, 1
    return args


def sent_count(postfix: PrivatePostfix) -> int:
    return postfix.log().count("status=sent")


@dataclass
class Path_:
    """One way through an MTA: a Postfix, the port to send to, the recipient."""

    name: str
    postfix: PrivatePostfix
    port: int
    rcpt: str
    #: the milter's process, whose CPU seconds per message are recorded
    milter_pid: int | None = None
    accepted: list[float] = field(default_factory=list)
    delivered: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)

    def run(self, count: int, clients: int, size: int, sender: str = MEMBER) -> None:
        """Send ``count`` messages over ``clients`` sessions; record accepted/s, delivered/s."""
        before = sent_count(self.postfix)
        cpu = process_cpu(self.milter_pid)
        start = time.perf_counter()
        proc = subprocess.run(
            [
                "smtp-source",
                "-d",  # many messages per connection, as a busy sending MTA does
                "-s", str(clients),
                "-m", str(count),
                "-l", str(size),
                "-S", "A typical post",  # without a Subject: the no-subject rule would hold it
                "-f", sender,
                "-t", self.rcpt,
                f"127.0.0.1:{self.port}",
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )  # fmt: skip
        accepted = time.perf_counter() - start
        if proc.returncode != 0 or proc.stderr.strip():
            raise RuntimeError(
                f"{self.name}: smtp-source to {self.rcpt}: {proc.stdout}{proc.stderr}"
            )
        wait_for(lambda: sent_count(self.postfix) - before >= count, timeout=900, interval=0.05)
        delivered = time.perf_counter() - start
        self.accepted.append(count / accepted)
        self.delivered.append(count / delivered)
        self.cpu_ms.append((process_cpu(self.milter_pid) - cpu) * 1000 / count)

    @property
    def best(self) -> tuple[float, float]:
        return max(self.accepted), max(self.delivered)

    @property
    def milter_cpu_ms(self) -> float:
        """The milter process's CPU milliseconds per message (the least of the rounds)."""
        return min(self.cpu_ms) if self.cpu_ms else 0.0


def process_cpu(pid: int | None) -> float:
    """CPU seconds of process ``pid`` (all its threads); 0 for None."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def make_database(root: Path, *, decorated: bool, dkim: str | None) -> tuple[str, str | None]:
    """A new SQLite list database with the 1-member list ``LIST``: (URL, the list domain's
    RSA private key PEM when ``dkim`` is "rsa" or "rsa+ed25519", else None)."""
    url = f"sqlite:///{root / 'bench.db'}"
    upgrade(url)
    engine = make_engine(url)
    pem = None
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, LIST_DOMAIN)
        mlist = lists.create(s, LIST)
        members.add(s, mlist, MEMBER)
        if dkim:
            pem = dkim_keys.create(s, LIST_DOMAIN, "bench", activate=True).private_key
        # No archive: on SQLite, concurrent decisions that each write an archive row fail
        # with "database is locked" (451) under this load (see docs/benchmarks.md);
        # the archive is not part of what these benches compare.
        mlist.archive_policy = ArchivePolicy.never
        if not decorated:
            mlist.subject_prefix = ""
            s.add(
                Template(
                    scope=TemplateScope.list,
                    mailing_list_id=mlist.id,
                    name="list:member:regular:footer",
                    text="",
                )
            )
    engine.dispose()
    return url, pem


class OtherMilter:
    """A private Postfix whose posting listener has another milter (started by ``start``,
    whose address Postfix's ``smtpd_milters`` takes)."""

    def __init__(self, root: Path, url: str, sink_port: int, name: str, milter: str) -> None:
        self.postfix = PrivatePostfix(
            root=root / "postfix",
            smtp_port=free_port(),
            reinject_port=free_port(),
            relay_port=sink_port,
            milter_socket=milter,
            database_url=url,
            name=name,
        )

    def path(self, name: str, rcpt: str = LIST, pid: int | None = None) -> Path_:
        return Path_(name, self.postfix, self.postfix.smtp_port, rcpt, pid)


@contextmanager
def noop_milter(root: Path, callbacks: str, decorate: bool) -> Iterator[tuple[str, int]]:
    """``mtaplugin.testing.noop_milter`` running; yields (its milter address, its pid)."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    sock = root / "noop.sock"
    args = [sys.executable, "-m", "mtaplugin.testing.noop_milter", f"unix:{sock}"]
    args += ["--to", MEMBER, "--callbacks", callbacks] + (["--decorate"] if decorate else [])
    log = open(root / "noop.log", "ab")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    try:
        wait_for(lambda: sock.exists() or proc.poll() is not None, timeout=60)
        if proc.poll() is not None:
            raise RuntimeError((root / "noop.log").read_text()[-2000:])
        yield f"unix:{sock}", proc.pid
    finally:
        stop_group(proc, 10)


@contextmanager
def mtaplugin_lab(
    root: Path, url: str, sink_port: int, env: dict[str, str] | None = None
) -> Iterator[Lab]:
    """``mtaplugin milter`` alone (no worker: a copy to a 1-member list is delivered in place,
    and no other process writes to the SQLite file) behind a private Postfix."""
    lab = Lab(
        root=root / "lab",
        database_url=url,
        command=("milter",),
        name="mtaplugin-bench",
        external_sink_port=sink_port,
        env=env or {},
    )
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


@contextmanager
def bench_root(prefix: str) -> Iterator[tuple[Path, int]]:
    """A temporary directory and a running ``smtp-sink``: (the directory, the sink's port)."""
    import shutil

    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    os.chmod(root, 0o755)
    sink, port = start_smtp_sink()
    try:
        yield root, port
    except BaseException:
        print(f"kept {root} for its logs", file=sys.stderr)
        raise
    else:
        shutil.rmtree(root, ignore_errors=True)
    finally:
        sink.terminate()
        sink.wait(10)


def rounds(
    paths: list[Path_],
    n: int,
    count: int,
    clients: int,
    size: int,
    progress: Callable[[str], None] = lambda s: None,
) -> None:
    """A warm-up of 50 messages each, then ``n`` rounds of every path in turn."""
    for p in paths:
        p.run(50, 1, size)
        p.accepted.clear()
        p.delivered.clear()
    for r in range(n):
        for p in paths:
            p.run(count, clients, size)
            progress(f"round {r + 1}/{n} {p.name}: {p.accepted[-1]:.0f} accepted/s")


@dataclass
class Row:
    measure: str
    value: float
    unit: str
    baseline: str
    ratio: float | None = None
    goal: str | None = None
    met: bool | None = None


def header(name: str, what: str) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{name}: {what}\n  {now}, load average {machine_load()}"


def write_json(path: str, bench: str, rows: list[Row]) -> None:
    if not path:
        return
    data = {"bench": bench, "rows": [r.__dict__ for r in rows]}
    Path(path).write_text(json.dumps(data, indent=2) + "\n")


def lab_pid(lab: Lab) -> int | None:
    """The pid of the lab's ``mtaplugin milter`` process."""
    proc = lab.runner.process
    return proc.pid if proc is not None else None
