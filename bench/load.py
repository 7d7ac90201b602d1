"""A steady offered load at the rate bare Postfix answers: what mtaplugin answers of it, how
fast, and that nothing is lost.

Many concurrent SMTP clients offer posts at a fixed rate (open loop: a post's start is due
at its time whether or not earlier ones were answered; at most ``--clients`` sessions at
once, one session per post, as the world's servers send), in the mix of
``mtaplugin.testing.loadbench`` (member posts, nonmember posts, a banned poster, email
commands, bounces).  Each reply code and the time from connect to the final answer are
recorded.

Per database backend, on one private Postfix with ``mtaplugin serve`` (the default
configuration: the built-in archive on) and a twin of its posting listener without the
milter (the same smtpd, restrictions and relay domains):

  1. **calibration**: bare Postfix (the twin) is offered ``--rate`` posts/s for
     ``--calibrate`` s; what it answers per second is the rate of the rounds (or
     ``--at-rate``);
  2. ``--rounds`` interleaved rounds (default 5), each a phase of bare Postfix and a phase
     of the milter's listener, both offered that rate for ``--duration`` s; after each
     phase the backlog (Postfix's queue, mtaplugin's outbox) drains;
  3. beside them, **the required-work floor** (``--no-floor``: not): a no-op pymilter on
     a Postfix of its own that journals every post before its 250 and drains it into a
     compressed archive + full-text index (``noop_milter --journal --archiver``; on
     SQLite a file of its own and FTS5, on PostgreSQL a database of the lab's server and
     a ``tsvector``),
     sending each one to 5 members (it decides nothing: every post of the mix is a list
     post to it, the banned poster's and the commands too), offered the same rate in the
     same rounds; then its archive must hold every post it answered 250;
  4. the count: at the sink (Postfix's smtp-sink writing every delivery to a dump file) and
     in the database: lost = what a 250 promised − what arrived; it must be 0.

Each figure is the median of the rounds with the lowest and highest beside it; the ratio
is the median of each round's milter ÷ bare.  The DNS of the run is a loopback server.

    .venv/bin/python bench/load.py [--quick] [--backend sqlite|postgresql|both] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mtaplugin.testing import benchreport, loadevidence, noop_journal
from mtaplugin.testing.benchdb import bench_database, machine_load, ready_for_mtas
from mtaplugin.testing.benchreport import Goal, Spread, interleaved, progress
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.loadbench import (
    DOMAIN,
    MEMBERS,
    MIX,
    Phase,
    answered_per_s,
    backlog,
    delivered,
    drain,
    lost,
    percentile,
    run_phase,
    setup,
    share_tempfail,
    start_dump_sink,
)
from mtaplugin.testing.milterbench import OtherMilter, bare_port, mtaplugin_lab, noop_milter
from mtaplugin.testing.postfix import PrivatePostfix
from mtaplugin.testing.postgres import PostgresServer

#: issue 34's goals
GOAL_ANSWERED = Goal(">=", 0.7)
GOAL_4XX = Goal("<", 1.0)  # percent
GOAL_LOST = Goal("==", 0)


def p99(phase: Phase) -> float:
    return percentile([r.seconds for r in phase.offered_results if r.code > 0], 0.99)


#: the required-work floor's title in the rows
FLOOR = "no-op pymilter, decorated, 5 members, journal + archiver (the required work)"


@contextlib.contextmanager
def floor_side(
    root: Path, sink_port: int, pg: PostgresServer | None, processes: int = 1
) -> Iterator[tuple[PrivatePostfix, noop_journal.Floor]]:
    """The required-work floor: its Postfix (the milter's listener's restrictions) and
    its journal (on PostgreSQL a database of its own on ``pg``, the lab's server), the
    milter sending each post to 5 members (``noop_milter`` gives the first,
    ``member@bench.example``, and the rest are the list's)."""
    (root / "floor-db").mkdir(parents=True)
    url = f"sqlite:///{root / 'floor-db' / 'load.db'}"  # Postfix's relay lookups, its own
    setup(url)
    members = [a for m in MEMBERS[1:] for a in ("--to", m)]
    journal = str(root / "floor" / noop_journal.FLOOR_DB)
    if pg is not None:
        pg.execute("CREATE DATABASE floor")
        journal = pg.url("floor")
    with noop_milter(root / "floor", "same", True, "--list-domain", DOMAIN, *members,
                     "--archiver", "--journal", journal,
                     "--processes", str(processes)) as (sock, pid):  # fmt: skip
        other = OtherMilter(root / "p-floor", url, sink_port, "load-floor", sock)
        other.postfix.extra_main["smtpd_client_connection_count_limit"] = "0"
        other.postfix.start()
        try:
            yield other.postfix, noop_journal.Floor(journal, pid)
        finally:
            other.postfix.stop()


def queue_drained(postfix: PrivatePostfix, limit: float) -> float:
    """Seconds until ``postfix``'s queue is empty (or ``limit``)."""
    start = time.perf_counter()
    while postfix.queue_size() and time.perf_counter() - start < limit:
        time.sleep(1.0)
    return time.perf_counter() - start


def run_backend(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-load-", dir="/tmp"))
    os.chmod(root, 0o755)
    url, pg = bench_database(root, backend == "postgresql")
    setup(url)
    sink, sink_port, dump = start_dump_sink(root / "sink")
    dns = DnsServer().start()
    phases: dict[str, list[Phase]] = {"bare": [], "milter": []}
    drains: list[float] = []
    floored = not args.no_floor
    floor_summary: dict[str, float] = {}
    evidence: list[dict[str, str]] = []
    try:
        if pg is not None:
            os.environ.setdefault("PGCONNECT_TIMEOUT", "5")
        with contextlib.ExitStack() as stack:
            lab = stack.enter_context(mtaplugin_lab(
                root,
                url,
                sink_port,
                {**dns.environ(), "MTAPLUGIN_MILTER_PROCESSES": str(args.processes)},
                # The load comes from one address here, from many servers in the world:
                # Postfix's per-client limit (50 sessions at once) would answer 421 to it.
                extra_main={"smtpd_client_connection_count_limit": "0"},
            ))  # fmt: skip
            ports = {"bare": bare_port(lab), "milter": lab.smtp_port}
            if floored:
                floor_postfix, floor = stack.enter_context(
                    floor_side(root, sink_port, pg, args.processes)
                )
                ports["floor"], phases["floor"] = floor_postfix.smtp_port, []
                warm = run_phase(ports["floor"], "warmfloor", 20, 1, 10, args.timeout)
            # warm up both paths (process start, caches, the list snapshot)
            run_phase(ports["milter"], "warm", 20, 1, 10, args.timeout)
            run_phase(ports["bare"], "warmbare", 20, 1, 10, args.timeout)
            drain(lab, url, 120)
            rate = args.at_rate
            if not rate:
                progress(f"[{backend}] calibration: bare Postfix offered {args.rate:g}/s "
                         f"for {args.calibrate:g} s")  # fmt: skip
                calibration = run_phase(
                    ports["bare"], "cal", args.rate, args.calibrate, args.clients, args.timeout
                )
                rate = max(1.0, float(int(answered_per_s(calibration))))
                drain(lab, url, args.drain)
            progress(f"[{backend}] the rounds at {rate:g} posts/s (what bare Postfix answered)")
            for r, side in interleaved(args.rounds, list(phases)):
                before = loadevidence.mark(lab)
                phase = run_phase(
                    ports[side], f"{side[0]}{r}", rate, args.duration, args.clients, args.timeout
                )
                phases[side].append(phase)
                if side == "floor":
                    took = queue_drained(floor_postfix, args.drain)
                else:
                    _first, took = drain(lab, url, args.drain)
                if side == "milter":
                    drains.append(took)
                progress(
                    f"[{backend}] round {r + 1}/{args.rounds} {side}: offered "
                    f"{len(phase.offered_results)}, answered {answered_per_s(phase):.1f}/s, "
                    f"4xx or none {share_tempfail(phase):.2f} %, p99 {p99(phase):.2f} s, "
                    f"drained in {took:.0f} s"
                )
                name = f"{time.strftime('%Y%m%d-%H%M%S')}-{backend}-{phase.name}"
                if side != "floor" and share_tempfail(phase) > args.evidence_over:
                    folder, line = loadevidence.keep(lab, phase, before, args.evidence, name)
                    evidence.append({"round": phase.name, "folder": str(folder), "what": line})
                    progress(f"[{backend}] {phase.name}: evidence kept in {folder}: {line}")
                elif cores := loadevidence.move_cores(before, args.evidence / name):
                    progress(f"[{backend}] {phase.name}: {', '.join(cores)} kept in "
                             f"{args.evidence / name}")  # fmt: skip
            remaining = backlog(lab, url)
            progress(f"[{backend}] counting what arrived")
            copies, reached = delivered(dump)
            losses = [lost(p, copies, reached, url) for p in phases["milter"]]
            if floored:  # the floor's archive once caught up: every post it answered 250
                floor.settle()
                ok = [r for p in [warm, *phases["floor"]] for r in p.offered_results]
                floor_summary = floor.summary(sum(1 for r in ok if 200 <= r.code < 300))
    finally:
        sink.terminate()
        sink.wait(10)
        dns.stop()
        if pg is not None:
            pg.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return {
        "backend": backend,
        "rate": rate,
        "backlog_left": {"postfix_queue": remaining[0], "outbox": remaining[1]},
        "drain_s": drains,
        "evidence": evidence,
        "lost": losses,
        "floor": floor_summary,
        "rounds": {
            side: [
                {
                    "offered": len(p.offered_results),
                    "answered_per_s": round(answered_per_s(p), 2),
                    "codes": dict(p.codes()),
                    "pct_4xx_or_none": round(share_tempfail(p), 3),
                    "p99_s": round(p99(p), 3),
                    "tempfail_sample": sorted(
                        {r.text for r in p.offered_results if r.code == 0 or 400 <= r.code < 500}
                    )[:3],
                    "unexpected_5xx": sum(
                        1 for r in p.offered_results if r.code >= 500 and r.kind != "banned"
                    ),
                }
                for p in ps
            ]
            for side, ps in phases.items()
        },
    }


def rows(found: dict[str, Any], report: benchreport.Report) -> None:
    b = found["backend"]
    rate = found["rate"]
    bare, milter = found["rounds"]["bare"], found["rounds"]["milter"]
    bare_rate = [r["answered_per_s"] for r in bare]
    ours_rate = [r["answered_per_s"] for r in milter]
    report.add(
        f"{b}: answered posts/s at the rate bare Postfix answers ({rate:g}/s offered)",
        Spread.of(ours_rate),
        "posts/s",
        baseline=f"bare Postfix {Spread.of(bare_rate).text(1)}/s",
        ratio=Spread.ratios(ours_rate, bare_rate),
        goal=GOAL_ANSWERED,
        key=f"load-{b}-answered",
    )
    report.add(
        f"{b}: 4xx (or no answer) share of the posts offered",
        Spread.of([r["pct_4xx_or_none"] for r in milter]),
        "%",
        goal=GOAL_4XX,
        key=f"load-{b}-4xx",
    )
    total_lost = sum(sum(v.values()) for v in found["lost"])
    report.add(
        f"{b}: lost (a 250 promised, not delivered/held/recorded), all rounds",
        total_lost,
        "posts",
        goal=GOAL_LOST,
        key=f"load-{b}-lost",
    )
    report.add(
        f"{b}: unexpected 5xx (not decided by a rule), all rounds",
        sum(r["unexpected_5xx"] for r in milter),
        "posts",
        goal=GOAL_LOST,
    )
    report.add(
        f"{b}: p99 time to answer",
        Spread.of([r["p99_s"] for r in milter]),
        "s",
        baseline=f"bare Postfix {Spread.of([r['p99_s'] for r in bare]).text()} s",
        ratio=Spread.ratios([r["p99_s"] for r in milter], [r["p99_s"] for r in bare]),
    )
    report.add(f"{b}: backlog drain time after a round", Spread.of(found["drain_s"]), "s")
    floor = found["rounds"].get("floor")
    if floor:  # what any pymilter doing the required work answers of the same rate
        floor_rate = [r["answered_per_s"] for r in floor]
        report.add(
            f"floor: {b}: {FLOOR}, answered posts/s at bare Postfix's rate",
            Spread.of(floor_rate),
            "posts/s",
            baseline=f"bare Postfix {Spread.of(bare_rate).text(1)}/s",
            ratio=Spread.ratios(floor_rate, bare_rate),
        )
        report.add(
            f"floor: {b}: {FLOOR}, 4xx (or no answer) share",
            Spread.of([r["pct_4xx_or_none"] for r in floor]),
            "%",
        )
        noop_journal.rows(report, f"{b}: {FLOOR}", found["floor"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rate", type=float, default=1000.0, help="posts/s offered to bare Postfix to calibrate"
    )
    parser.add_argument("--calibrate", type=float, default=10.0, help="seconds of calibration")
    parser.add_argument(
        "--at-rate", type=float, default=0.0, help="offer this rate in the rounds (no calibration)"
    )
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of each phase")
    parser.add_argument("--clients", type=int, default=100, help="SMTP sessions at once at most")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per session")
    parser.add_argument(
        "--drain", type=float, default=600.0, help="seconds to wait for the backlog"
    )
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="milter processes on the socket, mtaplugin's (milter.processes) and the floor's",
    )
    parser.add_argument("--keep", action="store_true", help="keep the run's directory")
    parser.add_argument(
        "--no-floor", action="store_true", help="no required-work floor beside the rounds"
    )
    parser.add_argument(
        "--evidence",
        type=Path,
        default=Path("var/load-evidence"),
        help="where a round over --evidence-over keeps its logs (mtaplugin.testing.loadevidence)",
    )
    parser.add_argument(
        "--cores",
        action="store_true",
        help="let mtaplugin's parts dump core (hundreds of MB each), kept with the evidence",
    )
    parser.add_argument(
        "--evidence-over",
        type=float,
        default=loadevidence.THRESHOLD,
        help="keep the logs of a round with more than this percent 4xx or unanswered",
    )
    benchreport.add_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.rate, args.calibrate, args.duration = 200.0, 3.0, 5.0
        args.rounds = min(args.rounds, 3)
    if not ready_for_mtas("bench/load.py starts a private Postfix", ("smtp-sink", "postfix")):
        return 1
    if args.cores:
        # a crashing part leaves its core in the working directory (core_pattern "core"),
        # for loadevidence to keep
        hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
        resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
    report = benchreport.Report("load")
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    found = []
    for b in backends:
        found.append(run_backend(b, args))
        print(json.dumps(found[-1]), flush=True)
    print(
        f"load: offered at the rate bare Postfix answered, {args.duration:g} s per phase, "
        f"{args.rounds} interleaved rounds, at most {args.clients} sessions; mix "
        f"{', '.join(f'{k} {v} %' for k, v in MIX.items())}; load average before "
        f"{report.load_before}, after {machine_load()}"
    )
    for f in found:
        rows(f, report)
    report.extra["runs"] = found
    report.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
