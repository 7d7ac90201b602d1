"""The parts of a benchmark run: its checks before it starts private MTAs, its database (a
new SQLite file, or a throw-away PostgreSQL server) and Postfix's smtp-sink standing in
for the members' servers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mtaplugin.testing import free_port, wait_for_port
from mtaplugin.testing.postgres import PostgresServer


def ready_for_mtas(starts: str, tools: Sequence[str] = ()) -> bool:
    """Before a benchmark starts private MTAs: from now on a SIGTERM exits through the
    caller's ``finally`` (which stops them); False, with the reason on stderr, unless it
    runs as root (``starts`` says what it starts) and every one of ``tools`` is installed."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if os.geteuid() != 0:
        print(f"{starts}: run it as root", file=sys.stderr)
        return False
    for tool in tools:
        if shutil.which(tool) is None:
            print(f"{tool} not found (apt-get install postfix)", file=sys.stderr)
            return False
    return True


def bench_database(root: Path, postgres: bool, url: str = "") -> tuple[str, PostgresServer | None]:
    """(URL, the server to stop afterwards or None).  ``url`` wins when given."""
    if postgres:
        # mkdtemp's 0700 would keep the postgres user out of its own data directory
        root.chmod(0o755)
        server = PostgresServer(root / "pg").start()
        server.execute("CREATE DATABASE bench")
        return server.url("bench"), server
    return url or f"sqlite:///{root / 'bench.db'}", None


def start_smtp_sink(backlog: int = 256) -> tuple[subprocess.Popen[bytes], int]:
    """Postfix's ``smtp-sink`` on a free loopback port: (the process, its port)."""
    port = free_port()
    proc = subprocess.Popen(
        ["smtp-sink", "-u", "postfix", f"127.0.0.1:{port}", str(backlog)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_port(port)
    return proc, port


def machine_load() -> str:
    """The machine's load averages (1, 5 and 15 minutes), for a bench's report."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _process_cpu(pid: int, children: bool = False) -> float:
    """A process's CPU seconds; with ``children``, also those of its children that ended
    (so that a server's total does not drop when a connection's process exits)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_seconds(server: PostgresServer | None = None) -> float:
    """CPU seconds used so far by this process and (``server``) every process of the
    bench's PostgreSQL server: on a machine shared with other jobs, a time in CPU seconds
    moves much less with their load than a wall-clock time does."""
    return time.process_time() + server_cpu_seconds(server)


def server_cpu_seconds(server: PostgresServer | None) -> float:
    """CPU seconds used so far by every process of the bench's PostgreSQL server (0 for
    SQLite, which runs in this process)."""
    used = 0.0
    if server is None:
        return used
    try:
        postmaster = int((server.datadir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return used
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if int(entry.name) == postmaster:
                used += _process_cpu(postmaster, children=True)
            elif ppid == postmaster:
                used += _process_cpu(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return used


def tree_pids(root: int) -> list[int]:
    """``root`` and every process below it."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(parents.get(pid, []))
    return found


def tree_cpu_seconds(root: int | None) -> float:
    """CPU seconds of process ``root`` and every live process below it (0 for None): what
    ``mtaplugin serve`` (milter, worker, lookup server, API) has spent so far."""
    if root is None:
        return 0.0
    used = 0.0
    for pid in tree_pids(root):
        try:
            used += _process_cpu(pid)
        except (OSError, ValueError, IndexError):
            continue
    return used


def tree_memory(pids: Sequence[int]) -> tuple[int, int]:
    """(RSS, PSS) in KiB, summed over ``pids``."""
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    return rss, pss
