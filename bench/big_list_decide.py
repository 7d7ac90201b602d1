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
from mtaplugin.testing import benchreport
from mtaplugin.testing.benchdb import (
    bench_database,
    cpu_seconds,
    machine_load,
    server_cpu_seconds,
)
from mtaplugin.testing.postgres import PostgresServer

BIG = "big@lists.bench"
SMALL = "small@lists.bench"
POSTER = "poster@bench.example"
GOAL_SECONDS = 2.0
BLOCK = 10_000


def message(to: str, n: int) -> bytes:
    return (
        f"From: {POSTER}\r\nTo: {to}\r\nSubject: bench {n}\r\n"
        f"Message-ID: <big-{n}-{time.monotonic_ns()}@bench.example>\r\n\r\n"
        + "A line of a typical short post.\r\n"
        * 40
    ).encode()


def populate(
    url: str, n: int, server: PostgresServer | None
) -> list[tuple[int, float, float, float]]:
    """The lists; returns (members so far, members/s of the block, members per CPU second
    of the block, the database server's share of that CPU) per block."""
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
    rates: list[tuple[int, float, float, float]] = []
    with sessions.begin() as s:
        done = 0
        mark = (time.perf_counter(), cpu_seconds(server), 0, server_cpu_seconds(server))

        def progress(k: int) -> None:
            nonlocal done, mark
            done += k
            if done - mark[2] >= BLOCK or done == n:
                now, cpu = time.perf_counter(), cpu_seconds(server)
                block = done - mark[2]
                server_cpu = server_cpu_seconds(server)
                used = max(1e-9, cpu - mark[1])
                share = (server_cpu - mark[3]) / used
                rates.append((done, block / (now - mark[0]), block / used, share))
                mark = (now, cpu, done, server_cpu)

        members.add_many(s, lists.get(s, BIG), entries, progress=progress)
    engine.dispose()
    return rates


def decide(
    engine: ListEngine, to: str, n: int, server: PostgresServer | None
) -> tuple[float, float, Verdict]:
    """(wall seconds, CPU seconds of this process and the database server, the verdict)."""
    envelope = Envelope(mail_from=POSTER, recipients=[f"<{to}>"], client_address="127.0.0.1")
    raw = message(to, n)
    start, cpu = time.perf_counter(), cpu_seconds(server)
    verdict = engine.decide(envelope, raw, in_place=True)
    return time.perf_counter() - start, cpu_seconds(server) - cpu, verdict


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", type=int, default=100_000)
    parser.add_argument("--postgres", action="store_true", help="a throw-away PostgreSQL")
    parser.add_argument("--profile", action="store_true", help="profile the cold decision")
    parser.add_argument("--warm", type=int, default=3, help="warm decisions to time")
    benchreport.add_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.members = min(args.members, 10_000)
    report = benchreport.Report("big_list_decide")
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-decide-", dir="/tmp"))
    os.chmod(root, 0o755)
    url, pg = bench_database(root, args.postgres)
    backend = "postgresql" if args.postgres else "sqlite"
    try:
        print(f"big_list_decide: {backend}, {args.members} members, load {machine_load()}")
        rates = populate(url, args.members, pg)
        print("  mass subscribe (one transaction), per block of 10 000:")
        for upto, rate, per_cpu, share in rates:
            print(
                f"    up to {upto:7d}: {rate:7.0f}/s wall  {per_cpu:7.0f}/CPU-s "
                f"(Python + database server; server {share:4.0%})"
                f"  x{per_cpu / rates[0][2]:.2f} of the first block"
            )
        sessions = sessionmaker_for(make_engine(url))

        def fresh() -> ListEngine:
            return ListEngine(sessions, site_owner="postmaster@lists.bench")

        smalls = [decide(fresh(), SMALL, i, pg) for i in range(3)]
        small_t, small_cpu = min(t for t, _c, _v in smalls), min(c for _t, c, _v in smalls)
        engine = fresh()
        profiler = cProfile.Profile() if args.profile else None
        if profiler is not None:
            profiler.enable()
        cold, cold_cpu, verdict = decide(engine, BIG, 100, pg)
        if profiler is not None:
            profiler.disable()
        if not isinstance(verdict, Accept | Discard):
            raise SystemExit(f"the post was not accepted: {verdict}")
        warms = [decide(engine, BIG, 200 + i, pg) for i in range(args.warm)]
        warm, warm_cpu = min(t for t, _c, _v in warms), min(c for _t, c, _v in warms)
        print("  decision (wall ms / CPU ms of this process and the database server):")
        print(
            f"    1-member list (baseline)        {small_t * 1000:8.1f} / {small_cpu * 1000:8.1f}"
        )
        for label, t, c in (("cold", cold, cold_cpu), ("warm", warm, warm_cpu)):
            print(
                f"    {args.members}-member list, {label}  {t * 1000:8.1f} / {c * 1000:8.1f}"
                f"   x{c / max(small_cpu, 1e-9):.0f} baseline (CPU)"
                f"   {t / GOAL_SECONDS:.2f} / {c / GOAL_SECONDS:.2f} of the goal (2 s)"
            )
        report.add(
            f"250 to a post, {args.members}-member list, cold, {backend}",
            cold,
            "s",
            baseline=f"1-member list {small_t * 1000:.0f} ms",
            ratio=cold / GOAL_SECONDS,
            goal="<= 2 s (ratio to the goal <= 1)",
            met=cold <= GOAL_SECONDS,
        )
        first_rate, last_rate = rates[0][2], rates[-1][2]
        report.add(
            f"mass subscribe, last block ÷ first, {backend}",
            last_rate,
            "members/CPU-s",
            baseline=f"first block {first_rate:.0f}/CPU-s",
            ratio=last_rate / first_rate,
            goal=">= 0.8 (no slow-down)",
            met=last_rate / first_rate >= 0.8,
        )
        print(f"  load after: {machine_load()}")
        report.write(args.json)
        if profiler is not None:
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(35)
    finally:
        if pg is not None:
            pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
