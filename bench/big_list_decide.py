"""Where the time of a post to a big list goes, without an MTA: the decision alone.

Builds a list of ``--members`` members with the mass-subscribe code, printing the rate per
10 000-member block (PostgreSQL used to slow down as the roster grew), then decides the
same kind of post as the milter would (``ListEngine.decide``, through the outbox: the
roster is over ``outbox.expand_in_place_max``) with a fresh engine (cold: the list's
snapshot is loaded from SQL) and again with the same engine (warm).  Baseline in the same
run: the same post to a 1-member list.  Prints the time of each, the ratio to the
baseline and to the goal (a post to a 100 000-member list answered in <= 2 s cold), and
with ``--profile`` the functions the cold decision spends its time in.

    .venv/bin/python bench/big_list_decide.py [--members 100000] [--postgres] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.engine import ListEngine
from mtaplugin.manage import domains, lists, members
from mtaplugin.model.enums import Action
from mtaplugin.posting.envelope import Envelope
from mtaplugin.posting.verdict import Accept, Discard, Verdict
from mtaplugin.testing.benchdb import bench_database

BIG = "big@lists.bench"
SMALL = "small@lists.bench"
POSTER = "poster@bench.example"
GOAL_SECONDS = 2.0
BLOCK = 10_000


def message(to: str, n: int) -> bytes:
    return (
        f"From: {POSTER}\r\nTo: {to}\r\nSubject: bench {n}\r\n"
        f"Message-ID: <big-{n}-{time.monotonic_ns()}@bench.example>\r\n\r\n"
        + "A line of a typical short post.\r\n" * 40
    ).encode()


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def populate(url: str, n: int) -> list[tuple[int, float]]:
    """The lists; returns (members so far, members/s of the block) per block."""
    upgrade(url)
    engine = make_engine(url)
    sessions = sessionmaker_for(engine)
    with sessions.begin() as s:
        domains.create(s, "lists.bench")
        big = lists.create(s, BIG)
        small = lists.create(s, SMALL)
        big.default_nonmember_action = small.default_nonmember_action = Action.accept
        members.add(s, small, "one@member.example")
    # One transaction, as ``mtaplugin members add`` and the imports do.
    entries = [(f"m{i:06d}@member{i % 97}.example", "") for i in range(n)]
    rates: list[tuple[int, float]] = []
    done = 0
    mark: list[float] = [time.perf_counter(), 0]

    def progress(k: int) -> None:
        nonlocal done
        done += k
        if done - mark[1] >= BLOCK or done == n:
            now = time.perf_counter()
            rates.append((done, (done - mark[1]) / (now - mark[0])))
            mark[:] = [now, float(done)]

    with sessions.begin() as s:
        members.add_many(s, lists.get(s, BIG), entries, progress=progress)
    engine.dispose()
    return rates


def decide(engine: ListEngine, to: str, n: int) -> tuple[float, Verdict]:
    envelope = Envelope(mail_from=POSTER, recipients=[f"<{to}>"], client_address="127.0.0.1")
    raw = message(to, n)
    start = time.perf_counter()
    verdict = engine.decide(envelope, raw, in_place=True)
    return time.perf_counter() - start, verdict


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", type=int, default=100_000)
    parser.add_argument("--postgres", action="store_true", help="a throw-away PostgreSQL")
    parser.add_argument("--profile", action="store_true", help="profile the cold decision")
    parser.add_argument("--warm", type=int, default=3, help="warm decisions to time")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-decide-", dir="/tmp"))
    os.chmod(root, 0o755)
    url, pg = bench_database(root, args.postgres)
    backend = "postgresql" if args.postgres else "sqlite"
    try:
        print(f"big_list_decide: {backend}, {args.members} members, load {load()}")
        rates = populate(url, args.members)
        print("  mass subscribe, members/s per block of 10 000:")
        for upto, rate in rates:
            print(f"    up to {upto:7d}: {rate:8.0f}/s  x{rate / rates[0][1]:.2f} of the first")
        sessions = sessionmaker_for(make_engine(url))

        def fresh() -> ListEngine:
            return ListEngine(sessions, site_owner="postmaster@lists.bench")

        small_t = min(decide(fresh(), SMALL, i)[0] for i in range(3))
        engine = fresh()
        profiler = cProfile.Profile() if args.profile else None
        if profiler is not None:
            profiler.enable()
        cold, verdict = decide(engine, BIG, 100)
        if profiler is not None:
            profiler.disable()
        if not isinstance(verdict, Accept | Discard):
            raise SystemExit(f"the post was not accepted: {verdict}")
        warm = min(decide(engine, BIG, 200 + i)[0] for i in range(args.warm))
        print(f"  decision, 1-member list (baseline)      {small_t * 1000:8.1f} ms")
        for label, t in (("cold", cold), ("warm", warm)):
            print(
                f"  decision, {args.members}-member list, {label}  {t * 1000:8.1f} ms"
                f"  x{t / small_t:.0f} baseline  {t / GOAL_SECONDS:.2f} of the goal (2 s cold)"
            )
        print(f"  load after: {load()}")
        if profiler is not None:
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(35)
    finally:
        if pg is not None:
            pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
