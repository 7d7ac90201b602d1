"""Where the time of a post to a big list goes, without an MTA: the decision alone.

Builds a list of ``--members`` members with the mass-subscribe code, printing the rate per
10 000-member block (PostgreSQL used to slow down as the roster grew), then decides the
same kind of post as the milter would (``ListEngine.decide``, through the outbox: the
roster is over ``outbox.expand_in_place_max``) with a fresh engine (cold: the list's
snapshot is loaded from SQL) and again with the same engine (warm).  Baseline in the same
run: the same post to a 1-member list, cold too; the two take turns for ``--rounds``
rounds (default 5) and each figure is the median, with the lowest and highest round.
Prints the time of each, the ratio to the baseline and to the goal (a post to a
100 000-member list answered in <= 2 s cold), and with ``--profile`` the functions the
first cold decision spends its time in.

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
from mtaplugin.enums import Action
from mtaplugin.manage import domains, lists, members
from mtaplugin.posting.verdict import Accept, Discard, Verdict
from mtaplugin.testing import benchreport
from mtaplugin.testing.benchdb import (
    bench_database,
    cpu_seconds,
    machine_load,
    server_cpu_seconds,
)
from mtaplugin.testing.benchreport import Goal, Spread, interleaved, progress
from mtaplugin.testing.postgres import PostgresServer
from mtaplugin.vocabulary.envelope import Envelope

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

        def count(k: int) -> None:
            nonlocal done, mark
            done += k
            if done - mark[2] >= BLOCK or done == n:
                now, cpu = time.perf_counter(), cpu_seconds(server)
                block = done - mark[2]
                server_cpu = server_cpu_seconds(server)
                used = max(1e-9, cpu - mark[1])
                share = (server_cpu - mark[3]) / used
                rates.append((done, block / (now - mark[0]), block / used, share))
                progress(f"mass subscribe: {done} of {n} members, {rates[-1][1]:.0f}/s")
                mark = (now, cpu, done, server_cpu)

        members.add_many(s, lists.get(s, BIG), entries, progress=count)
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
    parser.add_argument("--warm", type=int, default=5, help="warm decisions to time")
    benchreport.add_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.members, args.rounds = min(args.members, 10_000), min(args.rounds, 3)
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

        smalls: list[tuple[float, float]] = []
        colds: list[tuple[float, float]] = []
        profiler = cProfile.Profile() if args.profile else None
        n = 100
        for r, which in interleaved(args.rounds, (SMALL, BIG)):
            n += 1
            engine = fresh()
            if profiler is not None and which == BIG and not colds:
                profiler.enable()
            t, c, verdict = decide(engine, which, n, pg)
            if profiler is not None:
                profiler.disable()
            if not isinstance(verdict, Accept | Discard):
                raise SystemExit(f"the post to {which} was not accepted: {verdict}")
            (colds if which == BIG else smalls).append((t, c))
            progress(f"round {r + 1}/{args.rounds}: {which}, cold: {t * 1000:.0f} ms")
        warms = [decide(engine, BIG, 200 + i, pg)[:2] for i in range(args.warm)]
        small_t = Spread.of([w * 1000 for w, _c in smalls])
        small_cpu = Spread.of([c * 1000 for _w, c in smalls])
        cold_t, cold_cpu = Spread.of([w for w, _c in colds]), Spread.of([c for _w, c in colds])
        warm_t, warm_cpu = Spread.of([w for w, _c in warms]), Spread.of([c for _w, c in warms])
        print(f"  decision, median of {args.rounds} interleaved rounds [lowest-highest]:")
        print(f"    1-member list (baseline), cold: {small_t.text(1)} ms wall, "
              f"{small_cpu.text(1)} ms CPU")  # fmt: skip
        for label, wall, cpu in (("cold", cold_t, cold_cpu), ("warm", warm_t, warm_cpu)):
            print(
                f"    {args.members}-member list, {label}: {wall.text(3)} s wall, {cpu.text(3)} s "
                "CPU (this process and the database server)"
            )
        report.add(
            f"250 to a post, {args.members}-member list, cold (a fresh engine), {backend}",
            cold_t,
            "s",
            baseline=f"the 2 s goal (1-member list {small_t.text(0)} ms)",
            ratio=Spread.of([t / GOAL_SECONDS for t, _c in colds]),
            goal=Goal("<=", 1.0),
        )
        report.add(f"the same, CPU (this process and the database server), {backend}",
                   cold_cpu, "s")  # fmt: skip
        first = Spread.of([per_cpu for _u, _r, per_cpu, _s in rates[:3]]).median
        last = [per_cpu for _u, _r, per_cpu, _s in rates[-3:]]
        report.add(
            f"mass subscribe in one transaction, the last 3 blocks of 10 000 ÷ the first 3, "
            f"{backend}",
            Spread.of(last),
            "members/CPU-s",
            baseline=f"first blocks {first:.0f}/CPU-s",
            ratio=Spread.of([x / first for x in last]),
            goal=Goal(">=", 0.8),
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
