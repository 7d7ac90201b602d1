"""Requests per second of the REST API under gunicorn, and the memory of its workers.

Populates a database (progress shown): one list with 100 000 members and 1 000 more
lists.  Starts ``mtaplugin api`` (gunicorn, ``--workers`` workers) on it and measures, with
``--clients`` concurrent HTTP clients for ``--seconds`` per request kind and round, in
``--rounds`` rounds (default 5; each figure the median, with the lowest and highest):

* GET /3.1/system/versions -- the baseline: the same server, no database;
* GET /3.1/lists/{big}/roster/member?count=50&page=P -- pages spread over the roster,
  then its first page alone and its last page alone (their ratio: what a late page costs);
* GET /3.1/lists -- the whole collection of 1 001 lists with their member counts;
* GET /3.1/lists?count=50&page=P.

It prints requests/s, the ratio to the baseline, the last-page ÷ first-page time and the
RSS of the API workers, with the machine's load.

With ``--mailman VENV`` (GNU Mailman installed in a separate virtualenv, see
bench/mailman_side.py) it also serves the same data with Mailman's REST server, with as
many gunicorn workers; the two servers take turns round by round, and it prints
mtaplugin ÷ Mailman (the median of the rounds' ratios).

    .venv/bin/python bench/rest.py [--members 100000] [--lists 1000] [--postgres]
                                   [--mailman /tmp/mm-venv]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists, members
from mtaplugin.testing import benchreport, free_port, wait_for_port
from mtaplugin.testing.benchdb import bench_database
from mtaplugin.testing.benchreport import Goal, Spread, interleaved, progress
from mtaplugin.testing.mailman_venv import mailman_venv

DOMAIN = "lists.bench"
BIG = f"big@{DOMAIN}"
AUTH = "Basic " + base64.b64encode(b"restadmin:restpass").decode()


def populate(url: str, n_members: int, n_lists: int) -> None:
    upgrade(url)
    engine = make_engine(url, timeout=30)
    factory = sessionmaker_for(engine)
    with factory.begin() as s:
        domains.create(s, DOMAIN)
        big = lists.create(s, BIG)
        entries = [(f"member{i:06d}@example.net", f"Member {i}") for i in range(n_members)]
        done = [0]

        def added(k: int) -> None:
            done[0] += k
            if done[0] % 10_000 < k or done[0] == n_members:
                progress(f"members: {done[0]} of {n_members}")

        members.add_many(s, big, entries, progress=added)
    with factory.begin() as s:
        for i in range(n_lists):
            lists.create(s, f"list{i:04d}@{DOMAIN}")
            if (i + 1) % 200 == 0:
                progress(f"lists: {i + 1} of {n_lists}")
    engine.dispose()


def measure(port: int, paths: list[str], seconds: float, clients: int) -> float:
    """Requests per second over ``clients`` threads cycling through ``paths`` (answers
    other than 200, and requests that took longer than two minutes, are not counted and
    are reported)."""
    done = [0] * clients
    errors: list[str] = []
    stop = time.monotonic() + seconds

    def run(n: int) -> None:
        rnd = random.Random(n)
        while time.monotonic() < stop:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            try:
                conn.request("GET", rnd.choice(paths), headers={"Authorization": AUTH})
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    errors.append(f"HTTP {resp.status}")
                    continue
                done[n] += 1
            except OSError as exc:
                errors.append(type(exc).__name__)
            finally:
                conn.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print(f"    ({len(errors)} failed: {', '.join(sorted(set(errors)))})")
    return sum(done) / (time.monotonic() - start)


def rss_kib(master: int) -> tuple[int, list[int]]:
    """(the master's RSS, each worker's RSS), in KiB."""

    def rss(pid: int) -> int:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return rss(master), [rss(int(c)) for c in children]


def load() -> str:
    """The machine's load averages (1, 5, 15 min): the bench shares the machine."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def print_rss(name: str, master: int) -> None:
    master_rss, workers_rss = rss_kib(master)
    print(
        f"  {name} RSS: workers {', '.join(f'{r / 1024:.1f}' for r in workers_rss)} MiB "
        f"(master {master_rss / 1024:.1f} MiB)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=100_000)
    parser.add_argument("--lists", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=3.0, help="per case and round")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--postgres", action="store_true", help="a throw-away PostgreSQL")
    parser.add_argument("--database", default="", help="an existing, empty database URL")
    parser.add_argument("--mailman", type=Path, help="a virtualenv with GNU Mailman 3")
    parser.add_argument(
        "--mailman-venv",
        action="store_true",
        help="compare with GNU Mailman 3.3.10 in the throw-away virtualenv of the tests "
        "(made under the package cache on first use)",
    )
    benchreport.add_arguments(parser)
    args = parser.parse_args()
    if args.mailman_venv and args.mailman is None:
        args.mailman = mailman_venv()
    if args.quick:
        args.members, args.lists, args.seconds = 5000, 200, 1.0
        args.rounds = min(args.rounds, 3)
    report = benchreport.Report("rest")

    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-rest-", dir="/tmp"))
    os.chmod(root, 0o755)
    url, server = bench_database(root, args.postgres, args.database)
    proc: subprocess.Popen[bytes] | None = None
    mm_proc: subprocess.Popen[bytes] | None = None
    try:
        populate(url, args.members, args.lists)
        port = free_port()
        env = dict(
            os.environ,
            MTAPLUGIN_DATABASE_URL=url,
            MTAPLUGIN_API_LISTEN=f"127.0.0.1:{port}",
            MTAPLUGIN_API_WORKERS=str(args.workers),
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "mtaplugin.cli", "api"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for_port(port, timeout=30)
        pages = max(1, args.members // 50)
        n_all = args.lists + 1
        cases = [
            ("GET /3.1/system/versions (baseline)", ["/3.1/system/versions"]),
            (
                f"GET roster page count=50 ({args.members} members)",
                [f"/3.1/lists/{BIG}/roster/member?count=50&page={p}" for p in range(1, pages + 1)],
            ),
            (
                "GET roster page count=50, page 1 (first)",
                [f"/3.1/lists/{BIG}/roster/member?count=50&page=1"],
            ),
            (
                f"GET roster page count=50, page {pages} (last)",
                [f"/3.1/lists/{BIG}/roster/member?count=50&page={pages}"],
            ),
            (f"GET /3.1/lists ({n_all} lists, all)", ["/3.1/lists"]),
            (
                f"GET /3.1/lists?count=50 ({n_all} lists)",
                [f"/3.1/lists?count=50&page={p}" for p in range(1, n_all // 50 + 1)],
            ),
        ]
        servers = {"mtaplugin": (port, proc.pid)}
        if args.mailman:
            from mailman_side import prepare, serve

            progress("GNU Mailman: filling its database with the same lists and members")
            mm_port = free_port()
            cfg = prepare(
                args.mailman, root, mm_port, args.workers, DOMAIN, BIG, args.members, args.lists
            )
            mm_proc = serve(args.mailman, cfg)
            wait_for_port(mm_port, timeout=60)
            servers["Mailman"] = (mm_port, mm_proc.pid)
        rates: dict[str, list[list[float]]] = {name: [[] for _c in cases] for name in servers}
        for server_port, _pid in servers.values():
            measure(server_port, cases[0][1], 1.0, args.clients)  # warm up the workers
        for r, name in interleaved(args.rounds, list(servers)):
            for i, (_label, paths) in enumerate(cases):
                rates[name][i].append(measure(servers[name][0], paths, args.seconds, args.clients))
            progress(
                f"round {r + 1}/{args.rounds} {name}: "
                + ", ".join(f"{rates[name][i][-1]:.0f}" for i in range(len(cases)))
                + " req/s"
            )
        print(
            f"\nREST API: gunicorn, {args.workers} workers, {args.clients} clients, "
            f"{args.seconds:g} s per case and round, {args.rounds} interleaved rounds (medians "
            f"[lowest-highest]), {'PostgreSQL' if 'postgresql' in url else 'SQLite'}, "
            f"load {load()}"
        )
        for name in servers:
            print(f"  {name}:")
            base = rates[name][0]
            for i, (label, _paths) in enumerate(cases):
                print(
                    f"    {label:<48} {Spread.of(rates[name][i]).text(1):>22} req/s  "
                    f"{Spread.ratios(rates[name][i], base).text():>18} x baseline"
                )
        for name, (_port, pid) in servers.items():
            print_rss(name, pid)
        ours = rates["mtaplugin"]
        if "Mailman" in rates:
            theirs = rates["Mailman"]
            print("  mtaplugin ÷ Mailman (requests/s):")
            for i, (label, _p) in enumerate(cases):
                print(f"    {label:<48} {Spread.ratios(ours[i], theirs[i]).text(1):>18} x")
            report.add(
                f"REST GET /3.1/lists?count=50 ({n_all} lists) ÷ Mailman 3",
                Spread.of(ours[-1]),
                "req/s",
                baseline=f"Mailman {Spread.of(theirs[-1]).text(1)} req/s",
                ratio=Spread.ratios(ours[-1], theirs[-1]),
                goal=Goal(">=", 20),
            )
        report.add(
            f"REST roster page, last ÷ first (time per request), {args.members} members",
            Spread.of(ours[3]),
            "req/s",
            baseline=f"first page {Spread.of(ours[2]).text(1)} req/s",
            ratio=Spread.ratios(ours[2], ours[3]),
            goal=Goal("<=", 2),
        )
        report.write(args.json)
    finally:
        for running in (proc, mm_proc):
            if running is not None:
                stop(running)
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
