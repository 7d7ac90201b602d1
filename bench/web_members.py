"""The web UI's members page of a 100 000-member list: first, middle and last page, and a
search, against the same page of a 100-member list measured in the same run (the ratio
shows what the roster's size costs; SQL LIMIT/OFFSET with a total count, the second half
read from the other end), and the last page ÷ the first (goal: within 2x).

    .venv/bin/python bench/web_members.py [--members 100000] [--repeat 20] [--postgres]
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
from mtaplugin.testing.benchdb import bench_database, cpu_seconds
from mtaplugin.web.app import create_web_app
from mtaplugin.web.cookies import COOKIE

ADMIN = "admin@bench.example"
PASSWORD = "bench password"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--postgres", action="store_true", help="a throw-away PostgreSQL")
    benchreport.add_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.members, args.repeat = min(args.members, 5000), min(args.repeat, 3)
    report = benchreport.Report("web_members")
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-web-"))
    root.chmod(0o755)  # the postgres user starts its server below it
    url, server = bench_database(root, args.postgres)
    try:
        upgrade(url)
        sessions = sessionmaker_for(make_engine(url))
        with sessions.begin() as s:
            domains.create(s, "lists.bench")
            big = lists.create(s, "big@lists.bench")
            small = lists.create(s, "small@lists.bench")
            entries = [(f"m{n:06d}@members.bench", "") for n in range(args.members)]
            members.add_many(s, big, entries)
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

        def timed(path: str) -> float:
            samples = []
            cpu = []
            for _ in range(args.repeat):
                start, start_cpu = time.perf_counter(), cpu_seconds(server)
                page = testing.simulate_get(app, path, cookies={COOKIE: cookie})
                samples.append(time.perf_counter() - start)
                cpu.append(cpu_seconds(server) - start_cpu)
                assert page.status_code == 200, (path, page.status_code)
            cpu_times[path] = statistics.median(cpu)
            return statistics.median(samples)

        cpu_times: dict[str, float] = {}

        last = -(-args.members // 50)
        baseline = timed("/lists/small.lists.bench/members")
        backend = "postgresql" if args.postgres else "sqlite"
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        print(f"members page, {backend}, median of {args.repeat}, load {load}")
        print(f"  baseline: 100-member list, page 1   {baseline * 1000:8.1f} ms")
        times: dict[str, float] = {}
        for label, path in (
            ("page 1", "/lists/big.lists.bench/members"),
            (f"page {last // 2}", f"/lists/big.lists.bench/members?page={last // 2}"),
            (f"page {last} (last)", f"/lists/big.lists.bench/members?page={last}"),
            ("search 'm0999'", "/lists/big.lists.bench/members?q=m0999"),
        ):
            t = times[label] = timed(path)
            print(
                f"  {args.members}-member list, {label:<16} {t * 1000:8.1f} ms  x{t / baseline:.1f}"
            )
        ratio = times[f"page {last} (last)"] / times["page 1"]
        first_cpu = cpu_times["/lists/big.lists.bench/members"]
        last_cpu = cpu_times[f"/lists/big.lists.bench/members?page={last}"]
        print(
            f"  last page ÷ first page: {ratio:.2f} wall, {last_cpu / max(first_cpu, 1e-9):.2f} "
            "CPU (this process and the database server)  (goal: <= 2)"
        )
        report.add(
            f"web members page, last ÷ first, {args.members} members, {backend}",
            times[f"page {last} (last)"] * 1000,
            "ms",
            baseline=f"page 1 {times['page 1'] * 1000:.1f} ms",
            ratio=ratio,
            goal="<= 2",
            met=ratio <= 2,
        )
        report.write(args.json)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
