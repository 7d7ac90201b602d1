"""What the Postfix benches share (bench/postfix_overhead.py, bench/milter_ceiling.py,
bench/vs_opendkim.py): a list database, the mtaplugin lab behind a private Postfix whose
posting listener has a twin without the milter (``BenchPostfix.bare_port``) and, when
asked, the limit's listener (``BenchPostfix.limit_port``: bare Postfix fanning a post out
from one queue file, ``mtaplugin.testing.benchlimit``), further
private Postfix instances with another milter (a no-op pymilter, OpenDKIM), Postfix's
``smtp-sink`` for the members' server, and interleaved rounds of ``smtp-source`` counted
as accepted/s (the client's wall time) and delivered/s (until the maillog shows every
copy handed to the sink), with the CPU the milter's process tree spent per message."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.enums import ArchivePolicy, TemplateScope
from mtaplugin.manage import dkim as dkim_keys
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import Template
from mtaplugin.testing import GrowingFile, benchlimit, free_port, wait_for
from mtaplugin.testing.benchdb import machine_load, start_smtp_sink, tree_cpu_seconds
from mtaplugin.testing.benchlatency import LATENCY_DOMAIN
from mtaplugin.testing.benchreport import Spread, interleaved, progress
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.postfix import PrivatePostfix
from mtaplugin.testing.process import stop_group

MEMBER_DOMAIN = "bench.example"
MEMBER = f"member@{MEMBER_DOMAIN}"
LIST_DOMAIN = "lists.bench"
LIST = f"bench@{LIST_DOMAIN}"
#: a 1-member list like LIST whose member is delivered to the latency sink
LONE_LIST = f"lone@{LIST_DOMAIN}"
LONE_MEMBER = f"member@{LATENCY_DOMAIN}"
#: mail for a domain that is not a list domain (relayed by the same Postfix)
OTHER_DOMAIN = "other.bench"
OTHER = f"someone@{OTHER_DOMAIN}"
OTHER_SENDER = "sender@elsewhere.bench"
#: the limit's list address: one RCPT TO that the limit's cleanup expands to the members
FANOUT = f"fanout@{MEMBER_DOMAIN}"


def members_of(n: int) -> list[str]:
    """The addresses ``smtp-source -r n -t MEMBER`` sends to (MEMBER, 2member@, 3member@,
    ...): a list of these members gets the same recipients as the bare fan-out."""
    return [MEMBER] + [f"{i}{MEMBER}" for i in range(2, n + 1)]


def add_arguments(parser: argparse.ArgumentParser, messages: int = 1000) -> None:
    """The load options of the Postfix benches (Postfix's smtp-source)."""
    parser.add_argument("--messages", type=int, default=messages, help="per path and round")
    parser.add_argument("--clients", type=int, default=4, help="parallel SMTP sessions")
    parser.add_argument("--size", type=int, default=2000, help="message size in bytes")


def apply_quick(args: argparse.Namespace) -> argparse.Namespace:
    """``--quick``: 3 rounds of 150 messages (a smoke test, not figures)."""
    if args.quick:
        args.messages, args.rounds = min(args.messages, 150), min(args.rounds, 3)
    return args


class SentCounter:
    """``status=sent`` lines of a Postfix maillog so far, read incrementally (rereading a
    growing log twenty times a second would cost the bench's own CPU)."""

    _all: ClassVar[dict[Path, SentCounter]] = {}

    def __init__(self, path: Path) -> None:
        self.log, self.count = GrowingFile(path), 0

    @classmethod
    def of(cls, postfix: PrivatePostfix) -> SentCounter:
        return cls._all.setdefault(postfix.maillog, cls(postfix.maillog))

    def __call__(self) -> int:
        self.count += self.log.new_lines().count(b"status=sent")
        return self.count


@dataclass
class Path_:
    """One way through an MTA: a Postfix, the port to send to, the recipient."""

    name: str
    postfix: PrivatePostfix
    port: int
    rcpt: str
    #: the process tree whose CPU seconds per message are recorded (a milter, ``serve``)
    cpu_pid: int | None = None
    sender: str = MEMBER
    #: RCPT TO commands per message (smtp-source -r: rcpt, 2rcpt, 3rcpt, ...)
    recipients: int = 1
    #: copies each message makes at the sink
    copies: int = 1
    accepted: list[float] = field(default_factory=list)
    delivered: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    #: messages sent so far, the warm-up's included
    sent: int = 0

    def run(self, count: int, clients: int, size: int, stall: float = 180.0) -> None:
        """Send ``count`` messages over ``clients`` sessions; record accepted/s, delivered/s
        and the CPU milliseconds per message of ``cpu_pid``'s process tree."""
        sent = SentCounter.of(self.postfix)
        before = sent()
        cpu = tree_cpu_seconds(self.cpu_pid)
        start = time.perf_counter()
        proc = subprocess.run(
            [
                "smtp-source",
                "-d",  # many messages per connection, as a busy sending MTA does
                "-s", str(clients),
                "-m", str(count),
                "-l", str(size),
                "-r", str(self.recipients),
                "-S", "A typical post",  # without a Subject: the no-subject rule would hold it
                "-f", self.sender,
                "-t", self.rcpt,
                f"127.0.0.1:{self.port}",
            ],
            capture_output=True,
            text=True,
            timeout=1800,
        )  # fmt: skip
        accepted = time.perf_counter() - start
        self.sent += count
        if proc.returncode != 0 or proc.stderr.strip():
            raise RuntimeError(
                f"{self.name}: smtp-source to {self.rcpt}: {proc.stdout}{proc.stderr}"
            )
        expected = before + count * self.copies
        seen, since = sent(), time.perf_counter()
        while seen < expected:
            time.sleep(0.05)
            now = sent()
            if now != seen:
                seen, since = now, time.perf_counter()
            elif time.perf_counter() - since > stall:
                raise RuntimeError(
                    f"{self.name}: {expected - seen} of {count * self.copies} copies not "
                    f"delivered after {stall:.0f} s without progress:\n"
                    + self.postfix.log()[-3000:]
                )
        delivered = time.perf_counter() - start
        self.accepted.append(count / accepted)
        self.delivered.append(count / delivered)
        self.cpu_ms.append((tree_cpu_seconds(self.cpu_pid) - cpu) * 1000 / count)

    def clear(self) -> None:
        self.accepted.clear()
        self.delivered.clear()
        self.cpu_ms.clear()

    @property
    def accepted_s(self) -> Spread:
        return Spread.of(self.accepted)

    @property
    def delivered_s(self) -> Spread:
        return Spread.of(self.delivered)

    @property
    def cpu(self) -> Spread:
        """CPU milliseconds per message of the process tree (0 without one)."""
        return Spread.of(self.cpu_ms)


def rounds(paths: Sequence[Path_], n: int, count: int, clients: int, size: int) -> None:
    """A warm-up of 50 messages each (process start, caches, the list's snapshot), then
    ``n`` interleaved rounds of every path (``benchreport.interleaved``)."""
    for p in paths:
        p.run(50, 1, size)
        p.clear()
        progress(f"warm-up done: {p.name}")
    for r, p in interleaved(n, paths):
        p.run(count, clients, size)
        progress(
            f"round {r + 1}/{n} {p.name}: {count} messages, {p.accepted[-1]:.0f} accepted/s, "
            f"{p.delivered[-1]:.0f} delivered/s"
            + (f", {p.cpu_ms[-1]:.2f} ms CPU/msg" if p.cpu_pid else "")
        )


@dataclass
class BenchPostfix(PrivatePostfix):
    """The lab's Postfix with a twin of the posting listener that has no milter
    (``bare_port``): the same smtpd, restrictions and relay domains, ``smtpd_milters=``;
    and with ``limit_port``, another such twin whose cleanup expands ``limit_aliases``."""

    bare_port: int = 0
    limit_port: int = 0
    limit_aliases: dict[str, list[str]] = field(default_factory=dict)

    def write_config(self) -> None:
        super().write_config()
        with open(self.conf / "master.cf", "a") as f:
            f.write(
                f"""
# --- bench: the posting listener without the milter ---
127.0.0.1:{self.bare_port} inet n - n - - smtpd
  -o syslog_name={self.name}/bare
  -o smtpd_milters=
"""
            )
            if self.limit_port:
                lookup = benchlimit.write_table(self.conf, self.limit_aliases)
                largest = max(len(m) for m in self.limit_aliases.values())
                f.write(benchlimit.master_cf(self.name, self.limit_port, lookup, largest))

    def start(self) -> BenchPostfix:
        super().start()
        from mtaplugin.testing import wait_for_port

        wait_for_port(self.bare_port)
        if self.limit_port:
            wait_for_port(self.limit_port)
        return self


def make_database(
    url: str,
    *,
    n_members: int = 1,
    decorated: bool = True,
    dkim: str | None = None,
    archive: bool = True,
) -> str | None:
    """The list database: ``LIST`` with ``members_of(n_members)`` and ``LONE_LIST`` with
    ``LONE_MEMBER``, both as ``lists.create`` makes them (Mailman's default decorations,
    the built-in archive on) unless told otherwise.  Returns the list domain's RSA private
    key PEM when ``dkim`` ("rsa" or "rsa+ed25519") gives it one (every copy is then
    ARC-sealed and DKIM-signed), else None."""
    upgrade(url)
    engine = make_engine(url)
    pem = None
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, LIST_DOMAIN)
        if dkim:
            pem = dkim_keys.create(s, LIST_DOMAIN, "bench", activate=True).private_key
        for address, roster in ((LIST, members_of(n_members)), (LONE_LIST, [LONE_MEMBER])):
            mlist = lists.create(s, address)
            for email in roster:
                members.add(s, mlist, email)
            if not archive:
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
    return pem


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
            # matched before the list database's sqlite: table, which sets no busy timeout
            # and would fail while mtaplugin writes to the same file
            extra_relay_domains=(LIST_DOMAIN, MEMBER_DOMAIN, OTHER_DOMAIN, LATENCY_DOMAIN),
        )

    def path(self, name: str, rcpt: str = LIST, pid: int | None = None) -> Path_:
        return Path_(name, self.postfix, self.postfix.smtp_port, rcpt, pid)


@contextmanager
def noop_milter(
    root: Path, callbacks: str, decorate: bool, *more: str
) -> Iterator[tuple[str, int]]:
    """``mtaplugin.testing.noop_milter`` running with ``more`` options; (address, pid)."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    sock = root / "noop.sock"
    args = [sys.executable, "-m", "mtaplugin.testing.noop_milter", f"unix:{sock}"]
    args += ["--to", MEMBER, "--callbacks", callbacks, "--list-domain", LIST_DOMAIN]
    args += (["--decorate"] if decorate else []) + list(more)
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
    root: Path,
    url: str,
    sink_port: int,
    env: dict[str, str] | None = None,
    *,
    command: tuple[str, ...] = ("serve",),
    latency_transport: str = "",
    extra_main: dict[str, str] | None = None,
    limit_aliases: dict[str, list[str]] | None = None,
) -> Iterator[Lab]:
    """mtaplugin (``serve``, the default configuration: milter, worker, lookup server and
    API; or ``milter`` alone) behind a private ``BenchPostfix`` that relays the member,
    non-list and latency domains on both its posting listeners (``latency_transport``:
    the transport that takes ``LATENCY_DOMAIN`` to its sink; ``extra_main``: more main.cf
    parameters; ``limit_aliases``: the limit's listener, ``limit_port``, with them)."""
    lab = Lab(
        root=root / "lab",
        database_url=url,
        command=command,
        name="mtaplugin-bench",
        external_sink_port=sink_port,
        extra_relay_domains=(MEMBER_DOMAIN, OTHER_DOMAIN, LATENCY_DOMAIN),
        # the packaged default (the lab's own is 1 s, for the tests)
        env={"MTAPLUGIN_DATABASE_TIMEOUT": "5", **(env or {})},
    )
    old = lab.postfix
    lab.postfix = BenchPostfix(
        **{f.name: getattr(old, f.name) for f in fields(PrivatePostfix)},
        bare_port=free_port(),
        limit_port=free_port() if limit_aliases else 0,
        limit_aliases=limit_aliases or {},
    )
    lab.postfix.extra_main.update(extra_main or {})
    if latency_transport:
        lab.postfix.extra_main["transport_maps"] = latency_transport
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


def bare_port(lab: Lab) -> int:
    """The lab's posting listener without the milter."""
    assert isinstance(lab.postfix, BenchPostfix)
    return lab.postfix.bare_port


def limit_port(lab: Lab) -> int:
    """The lab's limit listener (``mtaplugin_lab(limit_aliases=...)``)."""
    assert isinstance(lab.postfix, BenchPostfix) and lab.postfix.limit_port
    return lab.postfix.limit_port


@contextmanager
def bench_root(prefix: str) -> Iterator[tuple[Path, int]]:
    """A temporary directory and a running ``smtp-sink``: (the directory, the sink's port)."""
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


def header(name: str, what: str) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{name}: {what}\n  {now}, load average {machine_load()}"


def lab_pid(lab: Lab) -> int | None:
    """The pid of the lab's mtaplugin process (``serve`` or ``milter``)."""
    proc = lab.runner.process
    return proc.pid if proc is not None else None
