"""The database of a benchmark run: a new SQLite file, or a throw-away PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

from mtaplugin.testing.postgres import PostgresServer


def bench_database(root: Path, postgres: bool, url: str = "") -> tuple[str, PostgresServer | None]:
    """(URL, the server to stop afterwards or None).  ``url`` wins when given."""
    if postgres:
        server = PostgresServer(root / "pg").start()
        server.execute("CREATE DATABASE bench")
        return server.url("bench"), server
    return url or f"sqlite:///{root / 'bench.db'}", None
