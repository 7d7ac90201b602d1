"""Two mail hosts on one PostgreSQL ÷ one, in one run: posts/s, copies/s, and the CPU
seconds each part spends per post.

Two private Postfix instances, each with its own ``mtaplugin serve`` (milter, lookup,
API, worker) re-injecting into its own Postfix, share one throw-away PostgreSQL server
(started with ``pg_stat_statements``) and one ``smtp-sink`` for the members' servers.
Postfix's ``smtp-source`` sends the posts, spread over the lists, from ``--clients``
sessions per host.  ``--rounds`` rounds (default 5), each measured twice, the order
alternating from one round to the next:

  * **one host**: every post through host A (host B idles, as a standby would);
  * **two hosts**: half the posts through each host, at once.

A round ends when both Postfix logs show every member's copy handed to the sink.  Each
figure is the median of the rounds, with the lowest and highest beside it.  Beside the
rates, the bench reads the CPU seconds of each process tree from /proc (mtaplugin's
processes, Postfix's, PostgreSQL's) and the database's own counts (transactions from
``pg_stat_database``, statements from ``pg_stat_statements``), per post.  On a machine
with fewer cores than the two hosts and the database need (the 2-core development VM),
the two hosts compete for the same CPU and the wall-clock ratio says little; the CPU
seconds per post say what each part costs, so what a second machine adds, and how far
one PostgreSQL goes (docs/scaling.md).

    .venv/bin/python bench/two_hosts.py [--posts 400] [--lists 10] [--members 20]
        [--clients 2] [--rounds 5] [--outbox] [--no-archive] [--pgbouncer PATH]
        [--pool 4] [--quick] [--json PATH]

``--outbox``: every list's copy goes through the outbox (``outbox.expand_in_place_max =
0``), which both hosts' workers share; by default a list of ``--members`` members is
fanned out in place by the host that took the post.

``--no-archive``: the lists keep no archive (the archive is most of PostgreSQL's work
for a post fanned out in place).  ``--pgbouncer PATH``: both hosts reach PostgreSQL
through this PgBouncer binary, started here in transaction mode (a pool of ``--pool``
server connections), with ``database.prepared_statements = false``; the CPU of PgBouncer
is counted as a part.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import psycopg

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.enums import ArchivePolicy
from mtaplugin.manage import domains, lists, members
from mtaplugin.testing import benchreport, free_port, wait_for, wait_for_port
from mtaplugin.testing.benchdb import machine_load, ready_for_mtas, start_smtp_sink
from mtaplugin.testing.benchreport import Spread, interleaved, progress
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.postgres import PostgresServer

DOMAIN = "lists.bench"
MEMBERS = "members.bench"
POSTER = f"poster@{MEMBERS}"


# --- CPU seconds of process trees, from /proc ---------------------------------------------
def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _processes() -> dict[int, tuple[int, int, float]]:
    """pid → (parent, session, CPU seconds of it and its ended children)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            f = _stat(int(entry.name))
        except (OSError, IndexError):
            continue
        # (fields after the name: state ppid pgrp session ... utime(11) stime cutime cstime)
        cpu = sum(int(x) for x in f[11:15]) / tick
        found[int(entry.name)] = (int(f[1]), int(f[3]), cpu)
    return found


def tree_cpu(root: int, procs: dict[int, tuple[int, int, float]]) -> float:
    """CPU seconds of ``root`` and every live descendant (with the children each reaped:
    a process that ended is counted in its parent)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _sid, _cpu) in procs.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in procs:
            total += procs[pid][2]
        todo.extend(children.get(pid, []))
    return total


@dataclass
class Host:
    name: str
    lab: Lab

    def roots(self) -> dict[str, int]:
        """The roots of this host's process trees: mtaplugin serve, Postfix's master."""
        serve = self.lab.process
        master = self.lab.postfix.root / "queue" / "pid" / "master.pid"
        found = {}
        if serve is not None:
            found["mtaplugin"] = serve.pid
        with contextlib.suppress(OSError, ValueError, IndexError):
            found["postfix"] = int(master.read_text().split()[0])
        return found

    def sent(self) -> int:
        return self.lab.postfix.log().count("status=sent")


@dataclass
class Sample:
    at: float
    cpu: dict[str, float]
    xacts: int
    statements: int
    sent: int


@dataclass
class Result:
    setup: str
    posts: int
    copies: int
    seconds: float
    cpu: dict[str, float] = field(default_factory=dict)
    xacts: int = 0
    statements: int = 0

    @property
    def posts_per_s(self) -> float:
        return self.posts / self.seconds

    @property
    def copies_per_s(self) -> float:
        return self.copies / self.seconds

    def per_post(self, part: str) -> float:
        """Milliseconds of CPU per post of ``part`` (a prefix: "mtaplugin", "postgres")."""
        return 1000 * sum(v for k, v in self.cpu.items() if k.startswith(part)) / self.posts


class Bench:
    def __init__(
        self, pg: PostgresServer, hosts: list[Host], bouncer: subprocess.Popen[bytes] | None
    ) -> None:
        self.pg, self.hosts, self.bouncer = pg, hosts, bouncer
        self.postmaster = int((pg.datadir / "postmaster.pid").read_text().split()[0])

    def sample(self) -> Sample:
        procs = _processes()
        cpu = {"postgres": tree_cpu(self.postmaster, procs)}
        if self.bouncer is not None:
            cpu["pgbouncer"] = tree_cpu(self.bouncer.pid, procs)
        for host in self.hosts:
            for part, pid in host.roots().items():
                cpu[f"{part} {host.name}"] = tree_cpu(pid, procs)
        with psycopg.connect(
            f"host=127.0.0.1 port={self.pg.port} user=postgres dbname=bench", autocommit=True
        ) as conn:
            row = conn.execute(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'bench'"
            ).fetchone()
            calls = conn.execute(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s"
                " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'bench'"
            ).fetchone()
        return Sample(
            time.perf_counter(),
            cpu,
            int(row[0]) if row else 0,
            int(calls[0]) if calls else 0,
            sum(h.sent() for h in self.hosts),
        )

    def connections(self) -> int:
        """The server connections open to the database now (mtaplugin's and PgBouncer's)."""
        with psycopg.connect(
            f"host=127.0.0.1 port={self.pg.port} user=postgres dbname=postgres", autocommit=True
        ) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = 'bench'"
                " AND pid <> pg_backend_pid()"
            ).fetchone()
        return int(row[0]) if row else 0

    def statements(self, posts: int, limit: int = 15) -> list[str]:
        """The statements run most since the reset: calls and ms of execution per post."""
        with psycopg.connect(
            f"host=127.0.0.1 port={self.pg.port} user=postgres dbname=bench", autocommit=True
        ) as conn:
            found = conn.execute(
                "SELECT calls, total_exec_time, query FROM pg_stat_statements s"
                " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'bench'"
                " ORDER BY calls DESC LIMIT %s",
                (limit,),
            ).fetchall()
        return [
            f"{calls / posts:6.2f} calls {exec_ms / posts:6.3f} ms  {' '.join(query.split())[:110]}"
            for calls, exec_ms, query in found
        ]

    def round(self, setup: str, senders: list[Host], lists_: list[str], args: Namespace) -> Result:
        copies = args.posts * args.members
        before = self.sample()
        threads = []
        errors: list[str] = []
        share = args.posts // len(senders)
        for i, host in enumerate(senders):
            # each host's posts spread over every list, one smtp-source per list
            count = share if i < len(senders) - 1 else args.posts - share * (len(senders) - 1)
            per_list = [count // len(lists_)] * len(lists_)
            for k in range(count - sum(per_list)):
                per_list[k] += 1
            for address, n in zip(lists_, per_list, strict=True):
                if n:
                    threads.append(
                        threading.Thread(
                            target=smtp_source,
                            args=(host.lab.smtp_port, address, n, args.clients, errors),
                        )
                    )
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise SystemExit("\n".join(errors))
        wait_for(
            lambda: sum(h.sent() for h in self.hosts) - before.sent >= copies,
            timeout=1800,
            interval=0.2,
        )
        after = self.sample()
        return Result(
            setup,
            args.posts,
            copies,
            after.at - before.at,
            {k: after.cpu.get(k, 0.0) - v for k, v in before.cpu.items()},
            after.xacts - before.xacts,
            after.statements - before.statements,
        )


class Namespace(argparse.Namespace):
    posts: int
    lists: int
    members: int
    clients: int
    rounds: int
    outbox: bool
    quick: bool
    json: Path | None
    pgbouncer: str
    pool: int
    no_archive: bool


def smtp_source(port: int, rcpt: str, count: int, clients: int, errors: list[str]) -> None:
    proc = subprocess.run(
        [
            "smtp-source", "-d", "-s", str(max(1, min(clients, count))), "-m", str(count),
            "-l", "2000", "-S", "A typical post", "-f", POSTER, "-t", rcpt,
            f"127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )  # fmt: skip
    if proc.returncode != 0 or proc.stderr.strip():
        errors.append(f"smtp-source to {rcpt}: {proc.stdout}{proc.stderr}")


def start_pgbouncer(
    binary: str, root: Path, pg: PostgresServer, pool: int
) -> tuple[subprocess.Popen[bytes], str]:
    """PgBouncer in transaction mode in front of ``pg``'s database "bench": (the process,
    the URL through it).  It runs as the postgres user (it refuses root)."""
    port = free_port()
    home = root / "pgbouncer"
    home.mkdir()
    shutil.chown(home, "postgres")
    ini = home / "pgbouncer.ini"
    ini.write_text(
        f"[databases]\nbench = host=127.0.0.1 port={pg.port} dbname=bench user=postgres\n"
        f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nauth_type = any\n"
        f"pool_mode = transaction\ndefault_pool_size = {pool}\nmax_client_conn = 500\n"
        f"unix_socket_dir =\nlogfile = {home}/pgbouncer.log\n"
    )
    # (it logs to its file and to stderr)
    proc = subprocess.Popen(
        [binary, "-u", "postgres", str(ini)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for_port(port)
    return proc, f"postgresql+psycopg://postgres@127.0.0.1:{port}/bench"


def setup_database(url: str, n_lists: int, n_members: int, archive: bool = True) -> list[str]:
    upgrade(url)
    engine = make_engine(url)
    out = []
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, DOMAIN)
        for i in range(n_lists):
            mlist = lists.create(s, f"list{i}@{DOMAIN}")
            if not archive:
                mlist.archive_policy = ArchivePolicy.never
            members.add(s, mlist, POSTER)
            for j in range(1, n_members):
                members.add(s, mlist, f"m{j}@{MEMBERS}")
            out.append(mlist.posting_address)
    engine.dispose()
    return out


def rows(ones: list[Result], twos: list[Result], out: benchreport.Report) -> None:
    """The rows: medians of the rounds [lowest-highest], ratios two ÷ one round by round."""

    def add(measure: str, unit: str, get: Callable[[Result], float], ratio: bool) -> None:
        one, two = [get(r) for r in ones], [get(r) for r in twos]
        out.add(
            f"two hosts: {measure}" if ratio else f"one host: {measure}",
            Spread.of(two if ratio else one),
            unit,
            baseline="one host (Postfix + mtaplugin serve) on the same PostgreSQL" if ratio else "",
            ratio=Spread.ratios(two, one) if ratio else None,
        )

    def cpu(r: Result) -> float:
        return 1000 * sum(r.cpu.values()) / r.posts

    add("posts/s", "posts/s", lambda r: r.posts_per_s, True)
    add("copies/s", "copies/s", lambda r: r.copies_per_s, True)
    add("posts/s", "posts/s", lambda r: r.posts_per_s, False)
    add("CPU per post, all parts", "ms", cpu, True)
    add("CPU per post, all parts", "ms", cpu, False)
    for part in ("postgres", "mtaplugin", "postfix"):
        add(f"{part} CPU per post", "ms", partial(Result.per_post, part=part), True)
    add("PostgreSQL CPU per post", "ms", lambda r: r.per_post("postgres"), False)
    add("PostgreSQL transactions per post", "transactions", lambda r: r.xacts / r.posts, True)
    add("PostgreSQL statements per post", "statements", lambda r: r.statements / r.posts, True)


def report(one: Result, two: Result, args: Namespace, load_before: str) -> None:
    path = "through the outbox (both workers)" if args.outbox else "fanned out in place"
    if args.no_archive:
        path += "; no archive"
    if args.pgbouncer:
        path += f"; through PgBouncer, transaction mode, {args.pool} server connections"
    print(
        f"two_hosts: {args.posts} posts x {args.rounds} interleaved rounds (the median round "
        f"below; the rows are medians [lowest-highest]) to {args.lists} lists of "
        f"{args.members} members ({path}), {args.clients} SMTP sessions per list and host, "
        f"PostgreSQL {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    print(f"  load average before: {load_before}, after: {machine_load()}; {os.cpu_count()} cores")
    for r in (one, two):
        print(
            f"  {r.setup:9} {r.posts_per_s:8.1f} posts/s {r.copies_per_s:9.1f} copies/s "
            f"({r.seconds:.1f} s)"
        )
        parts = "  ".join(f"{k} {1000 * v / r.posts:.1f}" for k, v in sorted(r.cpu.items()))
        print(
            f"            CPU ms per post: {parts}"
            f"  (total {1000 * sum(r.cpu.values()) / r.posts:.1f})"
        )
        print(
            f"            PostgreSQL per post: {r.xacts / r.posts:.1f} transactions, "
            f"{r.statements / r.posts:.1f} statements"
        )
    print(
        f"  ratio two / one: {two.posts_per_s / one.posts_per_s:.2f} posts/s, "
        f"{two.copies_per_s / one.copies_per_s:.2f} copies/s; CPU per post "
        f"{sum(two.cpu.values()) / sum(one.cpu.values()):.2f}"
    )
    busy = 1000 * sum(one.cpu.values()) / one.posts
    print(
        f"  one host's parts need {busy:.1f} ms of CPU per post: "
        f"{1000 / busy:.0f} posts/s per core, if nothing else ran; PostgreSQL's share "
        f"{one.per_post('postgres'):.2f} ms: one PostgreSQL core carries about "
        f"{1000 / max(one.per_post('postgres'), 1e-6):.0f} posts/s of this kind"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--posts", type=int, default=400, help="per round")
    parser.add_argument("--lists", type=int, default=10)
    parser.add_argument("--members", type=int, default=20, help="per list")
    parser.add_argument("--clients", type=int, default=2, help="SMTP sessions per list and host")
    parser.add_argument("--outbox", action="store_true", help="every copy through the outbox")
    parser.add_argument(
        "--no-archive",
        action="store_true",
        help="lists that keep no archive (archive_policy never)",
    )
    parser.add_argument("--pgbouncer", default="", help="PgBouncer binary to put in between")
    parser.add_argument("--pool", type=int, default=4, help="PgBouncer's server connections")
    benchreport.add_arguments(parser)
    args = parser.parse_args(namespace=Namespace())
    if args.quick:
        args.posts, args.lists, args.members, args.rounds = 60, 4, 10, min(args.rounds, 3)
    if not ready_for_mtas(
        "bench/two_hosts.py starts two private Postfix instances",
        ("smtp-source", "smtp-sink", "postfix"),
    ):
        return 1
    load_before = machine_load()
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-", dir="/tmp"))
    os.chmod(root, 0o755)
    pg = PostgresServer(
        root / "pg", options="-c shared_preload_libraries=pg_stat_statements"
    ).start()
    sink, sink_port = start_smtp_sink()
    hosts: list[Host] = []
    bouncer: subprocess.Popen[bytes] | None = None
    connections = 0
    ones: list[Result] = []
    twos: list[Result] = []
    try:
        pg.execute("CREATE DATABASE bench")
        pg.execute("CREATE EXTENSION pg_stat_statements", "bench")
        url = pg.url("bench")
        addresses = setup_database(url, args.lists, args.members, not args.no_archive)
        env = {"MTAPLUGIN_OUTBOX_EXPAND_IN_PLACE_MAX": "0" if args.outbox else "1000"}
        if args.pgbouncer:
            bouncer, url = start_pgbouncer(args.pgbouncer, root, pg, args.pool)
            env["MTAPLUGIN_DATABASE_PREPARED_STATEMENTS"] = "false"
        for name in ("a", "b"):
            lab = Lab(
                root=root / f"host-{name}",
                database_url=url,
                name=f"mtaplugin-bench-{name}",
                external_sink_port=sink_port,
                env=env,
            )
            hosts.append(Host(name, lab))
            lab.start()
        bench = Bench(pg, hosts, bouncer)
        # Warm up both hosts (process start, caches, the lists' snapshots).
        warm = Namespace(**{**vars(args), "posts": 2 * len(addresses)})
        bench.round("warm-up", hosts, addresses, warm)
        pg.execute("SELECT pg_stat_statements_reset()", "bench")
        for n, setup in interleaved(args.rounds, ["one host", "two hosts"]):
            done = bench.round(setup, hosts[:1] if setup == "one host" else hosts, addresses, args)
            (ones if setup == "one host" else twos).append(done)
            progress(
                f"round {n + 1}/{args.rounds} {setup}: {done.posts_per_s:.1f} posts/s, "
                f"{1000 * sum(done.cpu.values()) / done.posts:.1f} ms CPU per post"
            )
        top = bench.statements(2 * args.rounds * args.posts)
        connections = bench.connections()
    finally:
        for host in hosts:
            host.lab.stop()
        sink.terminate()
        sink.wait(10)
        if bouncer is not None:
            bouncer.terminate()
            bouncer.wait(10)
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    # the rounds of median posts/s, in detail
    one = sorted(ones, key=lambda r: r.posts_per_s)[len(ones) // 2]
    two = sorted(twos, key=lambda r: r.posts_per_s)[len(twos) // 2]
    report(one, two, args, load_before)
    print(f"  server connections to the database after the rounds (both hosts): {connections}")
    print("  the statements PostgreSQL ran most, per post (every measured round):")
    for line in top:
        print(f"    {line}")
    out = benchreport.Report("two_hosts")
    rows(ones, twos, out)
    out.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
