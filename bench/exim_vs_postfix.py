"""Posts/s to a 1 000-member list through Exim (the LMTP variant) ÷ through Postfix with
the milter, in one run.

Both MTAs run privately on loopback, on copies of one list database, delivering to the same
``smtp-sink`` (Postfix's load tool) standing in for the members' servers:

  * Postfix + milter: the milter decides at end of data and expands the list in place
    (1 000 members ≤ ``outbound.expand_in_place_max``); Postfix fans the post out.
  * Exim, LMTP variant (contrib/exim routers and transports, no ACLs): Exim accepts the
    post, the router sends it to ``mtaplugin lmtp``, which decides it and stores the
    members' copy in the outbox; the worker submits it back to Exim, which fans it out.

``smtp-source`` sends the posts (``--clients`` sessions).  A post counts when every
member's copy is logged as handed to the sink (Postfix: ``status=sent``; Exim: ``=>``/
``->`` via the sink transport).  Rounds alternate; the best round of each counts.

    .venv/bin/python bench/exim_vs_postfix.py [--posts 20] [--rounds 3] [--postgres]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists, members
from mtaplugin.testing import wait_for
from mtaplugin.testing.benchdb import bench_database, ready_for_mtas, start_smtp_sink
from mtaplugin.testing.exim import EximLab
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.postgres import PostgresServer

LIST = "bench@lists.bench"
POSTER = "m0000@member0.example"


def postfix_sent(lab: Lab) -> int:
    return lab.postfix.log().count("status=sent")


def exim_sent(lab: EximLab) -> int:
    try:
        text = lab.exim.mainlog.read_text(errors="replace")
    except FileNotFoundError:
        return 0
    return sum(1 for line in text.splitlines() if "T=sink_smtp" in line)


def copy_database(url: str, pg: PostgresServer | None, root: Path) -> str:
    if pg is not None:
        pg.execute("CREATE DATABASE bench_exim TEMPLATE bench")
        return pg.url("bench_exim")
    copy = root / "bench-exim.db"
    shutil.copy(url[len("sqlite:///") :], copy)
    return f"sqlite:///{copy}"


def run(
    port: int,
    delivered: Callable[[], int],
    posts: int,
    members_: int,
    clients: int,
    bar: tqdm,
) -> float:
    """Send ``posts`` posts; return posts/s until every member's copy was delivered."""
    before = delivered()
    start = time.perf_counter()
    proc = subprocess.run(
        ["smtp-source", "-s", str(clients), "-m", str(posts), "-l", "2000",
         "-S", "A typical post", "-f", POSTER, "-t", LIST, f"127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    if proc.returncode != 0 or proc.stderr.strip():
        raise SystemExit(f"smtp-source: {proc.stdout}{proc.stderr}")
    expected = posts * members_
    done = 0

    def all_there() -> bool:
        nonlocal done
        now = delivered() - before
        bar.update(max(0, min(now, expected) - done))
        done = max(done, min(now, expected))
        return now >= expected

    wait_for(all_there, timeout=3600, interval=0.25)
    return posts / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--posts", type=int, default=20, help="posts per round")
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=2, help="parallel SMTP sessions")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each, alternating")
    parser.add_argument("--postgres", action="store_true", help="a throw-away PostgreSQL")
    args = parser.parse_args()
    # A SIGTERM still stops the private MTAs and mtaplugin (the finally below).
    if not ready_for_mtas(
        "bench/exim_vs_postfix.py starts private MTAs", ("smtp-source", "smtp-sink", "postfix")
    ):
        return 1
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-", dir="/tmp"))
    os.chmod(root, 0o755)
    url, pg = bench_database(root, args.postgres)
    sink = None
    labs: list[Lab | EximLab] = []
    postfix_rates: list[float] = []
    exim_rates: list[float] = []
    try:
        upgrade(url)
        engine = make_engine(url)
        with sessionmaker_for(engine).begin() as s:
            domains.create(s, "lists.bench")
            mlist = lists.create(s, LIST)
            entries = [(f"m{i:04d}@member{i % 7}.example", "") for i in range(args.members)]
            members.add_many(s, mlist, entries)
        engine.dispose()
        # Each MTA gets its own copy of the database: each `mtaplugin serve` runs a worker,
        # and a worker sends every due outbox row to *its* MTA.
        exim_url = copy_database(url, pg, root)
        sink, sink_port = start_smtp_sink()
        print("starting a private Postfix and a private Exim ...", file=sys.stderr)
        postfix = Lab(
            root=root / "postfix", database_url=url, name="bench-postfix",
            external_sink_port=sink_port,
        )  # fmt: skip
        labs.append(postfix.start())
        exim = EximLab(
            root=root / "exim", database_url=exim_url, inline=False, name="bench-exim",
            external_sink_port=sink_port,
        )  # fmt: skip
        labs.append(exim.start())
        total = (2 * args.rounds + 2) * args.posts * args.members
        with tqdm(total=total, desc="copies", unit="copy", file=sys.stderr) as bar:
            for rates, port, count in (
                ([], postfix.smtp_port, lambda: postfix_sent(postfix)),
                ([], exim.smtp_port, lambda: exim_sent(exim)),
            ):  # warm-up: processes, caches, the list snapshot
                rates.append(run(port, count, args.posts, args.members, args.clients, bar))
            for _round in range(args.rounds):
                postfix_rates.append(
                    run(postfix.smtp_port, lambda: postfix_sent(postfix), args.posts,
                        args.members, args.clients, bar)
                )  # fmt: skip
                exim_rates.append(
                    run(exim.smtp_port, lambda: exim_sent(exim), args.posts,
                        args.members, args.clients, bar)
                )  # fmt: skip
    finally:
        for lab in reversed(labs):
            lab.stop()
        if sink is not None:
            sink.terminate()
            sink.wait(10)
        if pg is not None:
            pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    best_postfix, best_exim = max(postfix_rates), max(exim_rates)
    print(
        f"exim_vs_postfix: {args.posts} posts x {args.rounds} rounds to a "
        f"{args.members}-member list, {args.clients} sessions, database {url.split(':', 1)[0]}"
    )
    print(f"  Postfix + milter (in place):     {best_postfix:8.2f} posts/s "
          f"({best_postfix * args.members:8.0f} copies/s)")  # fmt: skip
    print(f"  Exim, LMTP variant (outbox):     {best_exim:8.2f} posts/s "
          f"({best_exim * args.members:8.0f} copies/s)")  # fmt: skip
    print(f"  ratio Exim / Postfix:            {best_exim / best_postfix:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
