"""The parts of a benchmark run: its database (a new SQLite file, or a throw-away
PostgreSQL server) and Postfix's smtp-sink standing in for the members' servers."""

from __future__ import annotations

import subprocess
from pathlib import Path

from mtaplugin.testing import free_port, wait_for_port
from mtaplugin.testing.postgres import PostgresServer


def bench_database(root: Path, postgres: bool, url: str = "") -> tuple[str, PostgresServer | None]:
    """(URL, the server to stop afterwards or None).  ``url`` wins when given."""
    if postgres:
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
