"""A throw-away PostgreSQL server on 127.0.0.1, started from the Debian packages.

As root, the server runs as the ``postgres`` user (initdb refuses root).  Trust
authentication on loopback only; fsync off (test data).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
from pathlib import Path

from mtaplugin.testing import free_port, wait_for_port


class PostgresError(RuntimeError):
    pass


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise PostgresError("PostgreSQL is not installed (apt-get install postgresql)")


def _children(parent: int) -> list[int]:
    """The processes whose parent is ``parent`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            found.append(int(stat.parent.name))
    return found


class PostgresServer:
    def __init__(self, root: Path, port: int | None = None, options: str = "") -> None:
        self.root = root
        self.port = port or free_port()
        self.bindir = _bindir()
        self.datadir = root / "data"
        #: more ``-c name=value`` server options (after the defaults, so they win)
        self.options = options
        self.process_id: int | None = None

    def _run(self, *argv: str) -> None:
        cmd = list(argv)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise PostgresError(f"{' '.join(argv)} failed: {proc.stdout}{proc.stderr}")

    def start(self) -> PostgresServer:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.datadir),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        return self.resume()

    def resume(self) -> PostgresServer:
        """Start the (initialised) server again, on the same port, after :meth:`stop`."""
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.datadir),
            "-w",
            "-t",
            "60",
            "-l",
            str(self.root / "server.log"),
            "-o",
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            f"-c max_connections=200 {self.options}".strip(),
            "start",
        )
        wait_for_port(self.port)
        pid = self.datadir / "postmaster.pid"
        self.process_id = int(pid.read_text().split()[0]) if pid.exists() else None
        return self

    def kill(self) -> None:
        """``kill -9`` the postmaster and every process of it at once, as when the machine
        is lost: no shutdown checkpoint, no goodbye to the clients or the replicas."""
        if self.process_id is None:
            return
        victims = [self.process_id, *_children(self.process_id)]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        self.process_id = None
        (self.datadir / "postmaster.pid").unlink(missing_ok=True)

    def replica(self, root: Path, port: int | None = None, options: str = "") -> PostgresServer:
        """A streaming replica of this (running) server, started: ``pg_basebackup -R`` over
        loopback (the replica's ``primary_conninfo`` names it ``application_name=replica``,
        the name ``synchronous_standby_names`` can list)."""
        standby = PostgresServer(root, port, options)
        root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        standby._run(
            str(self.bindir / "pg_basebackup"),
            "-D",
            str(standby.datadir),
            "-d",
            f"host=127.0.0.1 port={self.port} user=postgres application_name=replica",
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
            "--no-sync",
        )
        return standby.resume()

    def promote(self) -> None:
        """Make this replica a primary (``pg_ctl promote``, waiting until it accepts writes)."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-w", "promote")

    def stop(self) -> None:
        with contextlib.suppress(PostgresError):
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", "fast", "stop")

    def query(self, sql: str, dbname: str = "postgres") -> list[tuple[object, ...]]:
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}", autocommit=True
        ) as conn:
            return list(conn.execute(sql).fetchall())

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{dbname}"

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}", autocommit=True
        ) as conn:
            conn.execute(sql)
