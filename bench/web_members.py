"""The web UI's members page of a 100 000-member list: first, middle and last page, and a
search, against the same page of a 100-member list measured in the same run (the ratio
shows what the roster's size costs; SQL LIMIT/OFFSET with a total count, the second half
read from the other end), and the last page ÷ the first (goal: within 2x).  The pages take
turns for ``--rounds`` rounds (default 5), each round's figure the median of ``--repeat``
requests; each figure printed is the median of the rounds, with the lowest and highest.

    .venv/bin/python bench/web_members.py [--members 100000] [--repeat 5] [--postgres]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from falcon import testing

from mtaplugin import config
from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists, members, users
from mtaplugin.testing import benchreport
from mtaplugin.testing.benchdb import bench_database, cpu_seconds, machine_load
from mtaplugin.testing.benchreport import Goal, Spread, interleaved, progress
from mtaplugin.web.app import create_web_app
from mtaplugin.web.cookies import COOKIE

ADMIN = "admin@bench.example"
PASSWORD = "bench password"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5, help="requests per page and round")
    parser.add_argument("--postgres", action="store_true", help="a throw-away PostgreSQL")
    benchreport.add_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.members, args.repeat = min(args.members, 5000), min(args.repeat, 3)
        args.rounds = min(args.rounds, 3)
    report = benchreport.Report("web_members")
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-web-"))
    root.chmod(0o755)  # the postgres user starts its server below it
    url, server = bench_database(root, args.postgres)
    try:
        upgrade(url)
        sessions = sessionmaker_for(make_engine(url))
        done = [0]

        def added(k: int) -> None:
            done[0] += k
            if done[0] % 10_000 < k:
                progress(f"subscribed {done[0]} of {args.members}")

        with sessions.begin() as s:
            domains.create(s, "lists.bench")
            big = lists.create(s, "big@lists.bench")
            small = lists.create(s, "small@lists.bench")
            entries = [(f"m{n:06d}@members.bench", "") for n in range(args.members)]
            members.add_many(s, big, entries, progress=added)
            members.add_many(s, small, entries[:100])
            users.add_user(s, ADMIN, PASSWORD, site_admin=True)
        settings = config.load(environ={"MTAPLUGIN_SITE_VAR_DIR": str(root / "var")})
        app = create_web_app(settings, sessions)
        first = testing.simulate_get(app, "/login")
        cookie = first.cookies[COOKIE].value
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', first.text).group(1)  # type: ignore[union-attr]
        login = testing.simulate_post(
            app,
            "/login",
            body=urlencode({"csrf_token": csrf, "email": ADMIN, "password": PASSWORD}),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            cookies={COOKIE: cookie},
        )
        cookie = login.cookies[COOKIE].value

        def timed(path: str) -> tuple[float, float]:
            """(wall, CPU) seconds of a request for ``path``: the median of ``--repeat``."""
            wall, cpu = [], []
            for _ in range(args.repeat):
                start, start_cpu = time.perf_counter(), cpu_seconds(server)
                page = testing.simulate_get(app, path, cookies={COOKIE: cookie})
                wall.append(time.perf_counter() - start)
                cpu.append(cpu_seconds(server) - start_cpu)
                assert page.status_code == 200, (path, page.status_code)
            return statistics.median(wall), statistics.median(cpu)

        last = -(-args.members // 50)
        backend = "postgresql" if args.postgres else "sqlite"
        pages = {
            "100-member list, page 1 (baseline)": "/lists/small.lists.bench/members",
            "page 1": "/lists/big.lists.bench/members",
            f"page {last // 2}": f"/lists/big.lists.bench/members?page={last // 2}",
            f"page {last} (last)": f"/lists/big.lists.bench/members?page={last}",
            "search 'm0999'": "/lists/big.lists.bench/members?q=m0999",
        }
        walls: dict[str, list[float]] = {label: [] for label in pages}
        cpus: dict[str, list[float]] = {label: [] for label in pages}
        for r, label in interleaved(args.rounds, list(pages)):
            t, c = timed(pages[label])
            walls[label].append(t * 1000)
            cpus[label].append(c * 1000)
            progress(f"round {r + 1}/{args.rounds} {label}: {t * 1000:.1f} ms")
        base = Spread.of(walls["100-member list, page 1 (baseline)"])
        print(
            f"members page, {backend}, {args.members} members, median of {args.rounds} "
            f"interleaved rounds (each the median of {args.repeat} requests), load "
            f"{machine_load()}"
        )
        for page in pages:
            wall = Spread.of(walls[page])
            print(
                f"  {page:<36} {wall.text(1):>24} ms wall "
                f"{Spread.of(cpus[page]).text(1):>24} ms CPU   x{wall.median / base.median:.1f}"
            )
        page_1, final = "page 1", f"page {last} (last)"
        report.add(
            f"web members page, last ÷ first, {args.members} members, {backend}",
            Spread.of(walls[final]),
            "ms",
            baseline=f"page 1 {Spread.of(walls[page_1]).text(1)} ms",
            ratio=Spread.ratios(walls[final], walls[page_1]),
            goal=Goal("<=", 2),
        )
        report.add(
            f"web members page, last ÷ first, CPU (this process and the database server), "
            f"{backend}",
            Spread.of(cpus[final]),
            "ms",
            baseline=f"page 1 {Spread.of(cpus[page_1]).text(1)} ms",
            ratio=Spread.ratios(cpus[final], cpus[page_1]),
        )
        report.write(args.json)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
