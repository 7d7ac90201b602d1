"""What one post costs mtaplugin's milter in CPU, without an MTA: one command, the figures
of docs/benchmarks.md ("The decision's CPU").

In one process, on the SQLite database of bench/milter_ceiling.py (a 1-member list,
Mailman's default decorations unless ``--undecorated``, ARC-sealed and DKIM-signed with
``--dkim``), it times with ``time.process_time`` (CPU, so that the other work on a shared
machine moves it little):

  * the RCPT lookup of the list address (``ListEngine.check_recipient``);
  * the decision alone (``ListEngine.decide``: the rule chain, decorations, header edits);
  * the whole milter path in Python: the milter session's callbacks as libmilter calls
    them (MAIL, RCPT, DATA, each header field, the body, end of message) and the edits
    handed back, against a stub of libmilter's context;
  * a transaction for a domain that holds no list, through the same callbacks: it steps
    aside at DATA (no header, body or end-of-message callback).

``--mta`` also sends posts, and mail for a domain that holds no list, through a private
Postfix (``smtp-source``, 3 interleaved rounds) to ``mtaplugin milter`` and prints that
process's CPU per message (libmilter and its threads included) and delivered/s ÷ the same
Postfix's listener without the milter.  It runs the default configuration (``make demo``'s):
the database in write-ahead-log mode, ``mtaplugin serve`` (its lookup server answers
Postfix's ``relay_domains``; its worker drains the journal), the milter child's CPU counted
alone.  ``--journal delete``: the rollback journal, ``mtaplugin milter`` alone and Postfix
reading the file through a ``sqlite:`` table (the lab before issue 34).  It also counts
the decisions made again (``deciding again`` in the log).

``--profile rcpt|decide|milter|aside`` prints cProfile's top functions of that part.
``--instructions`` counts instead of timing, a figure free of the machine's noise: each
part runs twice under ``valgrind --tool=callgrind`` (100 and 600 posts), and the
difference in instructions is divided by 500 (minutes; needs valgrind).

    .venv/bin/python bench/profile_decision.py [--posts 2000] [--undecorated] [--dkim]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import logging
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from email.utils import formatdate
from pathlib import Path
from typing import Any

import Milter

from mtaplugin import config
from mtaplugin.accepted.drain import drain_all
from mtaplugin.accepted.fanout import Outlets
from mtaplugin.config import UnixSocket
from mtaplugin.daemon_log import DAEMON_FORMAT
from mtaplugin.engine import ListEngine
from mtaplugin.frontends.milter.session import milter_class
from mtaplugin.posting.verdict import Accept
from mtaplugin.testing.milterbench import LIST, MEMBER, lab_pid, make_database
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.wiring import build, list_engine

OTHER = "someone@elsewhere.example"


def message(size: int, n: int, rcpt: str = LIST) -> list[tuple[str, bytes]]:
    """The header fields of a post as ``smtp-source`` writes it; its body is ``body(size)``."""
    return [
        ("From", f"<{MEMBER}>".encode()),
        ("To", f"<{rcpt}>".encode()),
        ("Date", formatdate().encode()),
        ("Message-Id", f"<{n:08x}.{time.monotonic_ns():x}@bench.example>".encode()),
        ("Subject", b"A typical post"),
    ]


def body(size: int) -> bytes:
    line = b"La de da de da de da de da de da de da de da de da de da de da de da.\r\n"
    return (line * (size // len(line) + 1))[:size]


def raw(fields: list[tuple[str, bytes]], text: bytes) -> bytes:
    return b"".join(f.encode() + b": " + v + b"\r\n" for f, v in fields) + b"\r\n" + text


class StubContext:
    """libmilter's context as the milter session sees it: macros, and edits that go
    nowhere (counted)."""

    def __init__(self) -> None:
        self.edits = 0

    def getsymval(self, name: str) -> str | None:
        return "4XBENCH" if name == "i" else None

    def setreply(self, *reply: object) -> None:
        self.edits += 1

    def _edit(self, *args: object) -> None:
        self.edits += 1

    addheader = chgheader = addrcpt = delrcpt = replacebody = chgfrom = _edit


def milter_session(engine: ListEngine) -> Any:
    """A milter session as libmilter makes it for a unix socket, negotiated as with
    Postfix 3 (every step the MTA offers, so the session's no-reply flags hold)."""
    cls = milter_class(UnixSocket("/tmp/bench.sock"))
    session = cls(engine)
    session._ctx = StubContext()
    session._actions = Milter.CURR_ACTS
    session._protocol = 0x1FFFFF & ~cls.protocol_mask()
    return session


def one_transaction(
    session: Any, rcpt: str, fields: list[tuple[str, bytes]], text: bytes, chunk: int = 65536
) -> int:
    """The callbacks of one transaction, in libmilter's order, stopping where the session
    answers anything but CONTINUE/NOREPLY; the last answer."""
    go = (Milter.CONTINUE, Milter.NOREPLY)
    session.envfrom_bytes(f"<{MEMBER}>".encode())
    rc: int = session.envrcpt_bytes(f"<{rcpt}>".encode())
    if rc not in go:
        return rc
    rc = session.data()
    if rc not in go:
        return rc
    for name, value in fields:
        session.header_bytes(name, value)
    if not session._protocol & Milter.P_NOEOH:
        session.eoh()
    for start in range(0, len(text), chunk):
        session.body(text[start : start + chunk])
    return int(session.eom())


def decided(engine: ListEngine, text: bytes, count: int) -> None:
    """``count`` posts decided and accepted: their rows wait in the journal."""
    for n in range(count):
        engine.decide(Envelope(f"<{MEMBER}>", [f"<{LIST}>"]), raw(message(1, n), text))


def cpu_ms(count: int, work: Callable[[int], object], batches: int = 5) -> float:
    """CPU milliseconds per call of ``work(n)``: ``count`` calls after a warm-up, in
    ``batches``, the least batch's figure (the other work on a shared machine only ever
    adds to it)."""
    for n in range(min(50, count)):
        work(n)
    size = max(1, count // batches)
    best = float("inf")
    n = 0
    for _batch in range(batches):
        start = time.process_time()
        for _ in range(size):
            work(n)
            n += 1
        best = min(best, (time.process_time() - start) * 1000 / size)
    return best


def profiled(count: int, work: Callable[[int], object], top: int, warm: bool = True) -> None:
    for n in range(min(50, count) if warm else 0):
        work(n)
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for n in range(count):
        work(n)
    prof.disable()
    stats = pstats.Stats(prof, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_callers(8)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--posts", type=int, default=2000, help="posts per measure")
    parser.add_argument("--size", type=int, default=2000, help="body size in bytes")
    parser.add_argument("--undecorated", action="store_true", help="no subject prefix, no footer")
    parser.add_argument("--dkim", action="store_true", help="the list domain signs and seals")
    parser.add_argument(
        "--no-archive", action="store_true", help="the list does not archive (milter_ceiling's)"
    )
    choices = ("rcpt", "decide", "milter", "aside", "drain")
    parser.add_argument("--profile", choices=choices, default="", help="cProfile this part")
    parser.add_argument("--only", choices=choices, default="", help="time only this part")
    parser.add_argument("--top", type=int, default=35, help="functions --profile prints")
    parser.add_argument("--mta", action="store_true", help="also through a private Postfix")
    parser.add_argument(
        "--journal",
        choices=("wal", "delete"),
        default="wal",
        help="--mta: the database's journal mode (wal: the default configuration's)",
    )
    parser.add_argument(
        "--instructions", action="store_true", help="instructions per post (callgrind)"
    )
    args = parser.parse_args()
    if args.instructions:
        return count_instructions(args)

    # as the daemon logs: the decision line of every post, at INFO (to nowhere)
    logging.basicConfig(
        level=logging.INFO,
        stream=open(os.devnull, "w"),  # noqa: SIM115 - for the whole run
        format=DAEMON_FORMAT,
    )
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-profile-", dir="/tmp"))
    url = f"sqlite:///{root}/bench.db"
    make_database(
        url,
        decorated=not args.undecorated,
        dkim="rsa" if args.dkim else None,
        archive=not args.no_archive,
    )
    settings = config.load(None, environ={"MTAPLUGIN_DATABASE_URL": url})
    world = build(settings)
    engine = list_engine(world)
    engine.start()
    text = body(args.size)
    try:
        # Every post is decided and accepted in place (a wrong setup would be timed fast).
        verdict = engine.decide(Envelope(f"<{MEMBER}>", [f"<{LIST}>"]), raw(message(0, 0), text))
        assert isinstance(verdict, Accept) and verdict.edits.add_recipients, verdict
        session = milter_session(engine)
        assert one_transaction(session, LIST, message(0, 0), text) == Milter.ACCEPT

        parts: dict[str, Callable[[int], object]] = {
            "rcpt": lambda n: engine.check_recipient(f"<{LIST}>"),
            "decide": lambda n: engine.decide(
                Envelope(f"<{MEMBER}>", [f"<{LIST}>"]), raw(message(0, n), text)
            ),
            "milter": lambda n: one_transaction(session, LIST, message(0, n), text),
            "aside": lambda n: one_transaction(session, OTHER, message(0, n, OTHER), text),
        }
        outlets = Outlets.of(settings)
        drain_all(world.sessions, outlets)  # the posts decided above
        if args.profile == "drain":
            decided(engine, text, args.posts)
            profiled(1, lambda n: drain_all(world.sessions, outlets), args.top, warm=False)
            return 0
        if args.profile:
            profiled(args.posts, parts[args.profile], args.top)
            return 0
        figures = {
            name: cpu_ms(args.posts, work) if args.only in ("", name) else float("nan")
            for name, work in parts.items()
        }
        figures["drain"] = float("nan")
        if args.only in ("", "drain") and not args.no_archive:  # (else nothing to drain)
            drain_all(world.sessions, outlets)
            decided(engine, text, args.posts)
            started = time.process_time()
            done = drain_all(world.sessions, outlets)
            assert done.posts == args.posts and not done.repeats, done
            figures["drain"] = (time.process_time() - started) * 1000 / args.posts
    finally:
        engine.close()
        world.close()
    kind = "undecorated" if args.undecorated else "decorated"
    print(
        f"profile_decision: {args.posts} posts of {args.size} bytes, SQLite, 1-member list,"
        f" {kind}{', sealed + signed' if args.dkim else ''}; CPU ms per post"
    )
    print(f"  RCPT lookup of the list address          {figures['rcpt']:7.3f}")
    print(f"  decision alone (ListEngine.decide)       {figures['decide']:7.3f}")
    print(f"  milter path in Python (MAIL .. edits)    {figures['milter']:7.3f}")
    print(f"  non-list mail, stepping aside at DATA    {figures['aside']:7.3f}")
    print(f"  the worker's fan-out (archive, digest)   {figures['drain']:7.3f}")
    if args.mta:
        for name, cpu, ratio in through_postfix(args):
            print(f"  {name:40} {cpu:7.3f}   delivered/s {ratio:.2f} of bare Postfix")
    return 0


def count_instructions(args: argparse.Namespace) -> int:
    """Instructions per post of each part (``--only``: of that one), from two runs of this
    command under callgrind."""
    import re
    import shutil
    import subprocess

    if shutil.which("valgrind") is None:
        print("--instructions needs valgrind", file=sys.stderr)
        return 1
    env = {**os.environ, "PYTHONHASHSEED": "0"}

    def collected(part: str, posts: int) -> int:
        command = [
            "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
            sys.executable, __file__, "--only", part, "--posts", str(posts),
            "--size", str(args.size),
            *(["--undecorated"] if args.undecorated else []),
            *(["--dkim"] if args.dkim else []),
            *(["--no-archive"] if args.no_archive else []),
        ]  # fmt: skip
        run = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
        found = re.search(r"Collected : (\d+)", run.stderr)
        assert found is not None, run.stderr[-2000:]
        return int(found.group(1))

    print(f"profile_decision: instructions per post (callgrind), {args.size}-byte posts")
    for part in [args.only] if args.only else ["rcpt", "decide", "milter", "aside"]:
        per_post = (collected(part, 600) - collected(part, 100)) / 500
        print(f"  {part:8} {per_post / 1000:8.0f} k")
    return 0


def milter_pid(lab: Any) -> int:
    """The pid of ``mtaplugin serve``'s milter (a child process of its own)."""
    from mtaplugin.testing.benchdb import tree_pids

    root = lab_pid(lab)
    assert root is not None
    for pid in tree_pids(root):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"milter" in argv:
                return pid
    raise AssertionError("no milter process under mtaplugin serve")


def through_postfix(args: argparse.Namespace) -> list[tuple[str, float, float]]:
    """Through a private Postfix (``smtp-source``, 4 sessions, 3 interleaved rounds of
    ``--posts``): (path, the ``mtaplugin milter`` process's CPU ms per message, delivered/s
    ÷ bare Postfix's; medians of the rounds) for a list post and for mail to a domain that
    holds no list on the listener with the milter; bare Postfix is the listener without it."""
    from mtaplugin.testing.benchdb import ready_for_mtas
    from mtaplugin.testing.benchreport import Spread
    from mtaplugin.testing.lab import Lab
    from mtaplugin.testing.milterbench import Path_, bench_root, rounds

    if not ready_for_mtas("--mta starts a private Postfix", ("smtp-source", "smtp-sink")):
        return []
    with bench_root("mtaplugin-profile-mta-") as (root, sink_port):
        url = f"sqlite:///{root}/bench.db"
        make_database(
            url,
            decorated=not args.undecorated,
            dkim="rsa" if args.dkim else None,
            archive=not args.no_archive,
        )
        # the member's domain is relayed on the milter's listener.  WAL (the default
        # configuration's, as `make demo` runs it): `mtaplugin serve`, whose lookup server
        # answers Postfix's relay_domains, the milter's CPU counted alone; the rollback
        # journal: `mtaplugin milter` alone, Postfix's sqlite: table reading the file.
        wal = args.journal == "wal"
        lab = Lab(
            root=root / "lab",
            database_url=url,
            command=("serve",) if wal else ("milter",),
            name="mtaplugin-profile",
            external_sink_port=sink_port,
            extra_relay_domains=(MEMBER.partition("@")[2],),
            env={"MTAPLUGIN_DATABASE_SQLITE_WAL": "true" if wal else "false"},
        )
        with lab:
            pid = milter_pid(lab) if wal else lab_pid(lab)
            paths = [
                Path_("bare", lab.postfix, lab.postfix.reinject_port, MEMBER),
                Path_("milter process, list post", lab.postfix, lab.smtp_port, LIST, pid),
                Path_("milter process, non-list mail", lab.postfix, lab.smtp_port, MEMBER, pid),
            ]
            rounds(paths, 3, args.posts, 4, args.size)
            again = lab.runner.log().count("deciding again")
            print(f"  ({args.journal} journal: {again} decisions made again)")
    bare = paths[0].delivered
    return [(p.name, p.cpu.median, Spread.ratios(p.delivered, bare).median) for p in paths[1:]]


if __name__ == "__main__":
    sys.exit(main())
