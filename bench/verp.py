"""What VERP costs: member copies/s to a 1 000-member list through Postfix, VERPed and not,
in one run.

Three private Postfix instances (built from contrib/postfix/), each with its own ``mtaplugin
serve`` on copies of one list database, all delivering to one ``smtp-sink`` (Postfix's
load tool, standing in for the members' servers):

  * ``plain``: no VERP (the baseline): the milter fans each post out in place, one queue
    file, every copy from ``list-bounces@``;
  * ``xverp``: ``verp_delivery_interval = 1``, ``outbox.xverp = true``: the worker submits
    each post once to the re-injection listener with ``MAIL FROM:<list-bounces@...>
    XVERP``, and Postfix writes each member's ``list-bounces+member=domain@`` itself;
  * ``per-member``: ``verp_delivery_interval = 1``, ``outbox.xverp = false`` (what Exim and
    Sendmail get): the worker submits one transaction per member, with its VERPed sender.

A post counts when every member's copy is logged as handed to the sink.  Rounds alternate
between the three; the best round of each counts.

    .venv/bin/python bench/verp.py --members 1000 --posts 3 --rounds 2 [--postgres]
"""

from __future__ import annotations

import argparse
import os
import shutil
import smtplib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists, members
from mtaplugin.testing import wait_for
from mtaplugin.testing.benchdb import bench_database, ready_for_mtas, start_smtp_sink
from mtaplugin.testing.lab import Lab

POSTER = "m0@bench.example"
LIST = "bench@lists.bench"
MODES = {
    "plain": {"MTAPLUGIN_BOUNCES_VERP_DELIVERY_INTERVAL": "0"},
    "xverp": {"MTAPLUGIN_BOUNCES_VERP_DELIVERY_INTERVAL": "1", "MTAPLUGIN_OUTBOX_XVERP": "true"},
    "per-member": {
        "MTAPLUGIN_BOUNCES_VERP_DELIVERY_INTERVAL": "1",
        "MTAPLUGIN_OUTBOX_XVERP": "false",
    },
}


def make_post(subject: str) -> bytes:
    return (
        f"From: {POSTER}\r\nTo: {LIST}\r\nSubject: {subject}\r\n"
        f"Message-ID: <{time.time_ns()}@bench.example>\r\n"
        "Date: Fri, 04 Dec 2026 09:00:00 +0000\r\n\r\n" + "A typical post.\r\n" * 100
    ).encode()


def sent_count(lab: Lab) -> int:
    return lab.postfix.log().count("status=sent")


def run(lab: Lab, posts: int, copies: int, bar: tqdm[Any]) -> float:
    """Send ``posts`` posts; copies/s until every member's copy left Postfix."""
    before = sent_count(lab)
    start = time.perf_counter()
    with smtplib.SMTP("127.0.0.1", lab.smtp_port, timeout=120) as smtp:
        for i in range(posts):
            post = make_post(f"verp bench {time.time_ns()} {i}")
            refused = smtp.sendmail(POSTER, [LIST], lab.prepare(post))
            if refused:
                raise SystemExit(f"refused: {refused}")
    wait_for(lambda: sent_count(lab) - before >= posts * copies, timeout=1800, interval=0.2)
    elapsed = time.perf_counter() - start
    bar.update(1)
    return posts * copies / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--posts", type=int, default=3, help="posts per round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each, alternating")
    parser.add_argument(
        "--postgres", action="store_true", help="start a throw-away PostgreSQL server and use it"
    )
    args = parser.parse_args()
    # A SIGTERM still stops the private MTAs and mtaplugin (the finally below).
    if not ready_for_mtas(
        "bench/verp.py starts private Postfix instances", ("smtp-sink", "postfix")
    ):
        return 1
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-verp-", dir="/tmp"))
    os.chmod(root, 0o755)
    labs: dict[str, Lab] = {}
    pgs = []
    sink, sink_port = start_smtp_sink()
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    load_before = os.getloadavg()
    try:
        for mode, env in MODES.items():
            url, pg = bench_database(root / mode, args.postgres)
            if pg is not None:
                pgs.append(pg)
            (root / mode).mkdir(exist_ok=True)
            upgrade(url)
            engine = make_engine(url)
            with sessionmaker_for(engine).begin() as s:
                domains.create(s, "lists.bench")
                mlist = lists.create(s, LIST)
                # (outbox.expand_in_place_max is 1000: the plain list goes in place)
                for i in range(args.members):
                    members.add(s, mlist, f"m{i}@bench.example")
            engine.dispose()
            labs[mode] = Lab(
                root=root / mode / "lab",
                database_url=url,
                name=f"bench-verp-{mode}",
                external_sink_port=sink_port,
                env=env,
            )
        for lab in labs.values():
            lab.start()
        bar = tqdm(total=len(MODES) * (args.rounds + 1), desc="rounds", file=sys.stderr)
        for lab in labs.values():  # warm up: process start, caches, the list snapshot
            run(lab, 1, args.members, bar)
        for _round in range(args.rounds):
            for mode, lab in labs.items():
                rates[mode].append(run(lab, args.posts, args.members, bar))
        bar.close()
    finally:
        for lab in labs.values():
            lab.stop()
        sink.terminate()
        sink.wait(10)
        for pg in pgs:
            pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    load_after = os.getloadavg()
    best = {mode: max(r) for mode, r in rates.items()}
    print(
        f"verp: {args.posts} posts x {args.rounds} rounds to a {args.members}-member list, "
        f"database {'postgresql' if args.postgres else 'sqlite'}, "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
        f"({os.cpu_count()} cores)"
    )
    plain = best["plain"]
    for mode, label in (
        ("plain", "unVERPed, in place (one queue file)"),
        ("xverp", "VERPed, outbox + Postfix XVERP"),
        ("per-member", "VERPed, one outbox transaction per member"),
    ):
        rate = best[mode]
        print(
            f"  {label:43} {rate:8.1f} copies/s {rate / args.members:6.2f} posts/s"
            f"   ratio to unVERPed {rate / plain:5.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
