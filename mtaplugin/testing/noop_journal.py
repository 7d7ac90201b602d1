"""The required-work floor's database: the least a list manager must write for issue 34's
promise ("a post answered 250 is never lost, the archive and the digest included").

``noop_milter --journal PATH`` writes each post it is about to answer into the table
``journal`` of the SQLite file ``PATH`` and commits before it replies: the raw post, its
list and the time, one ``INSERT`` and one ``COMMIT``, nothing decided.  The archiving
drain (:mod:`mtaplugin.testing.noop_archiver`) moves the rows into ``archive`` (the post
zlib-compressed, as ``mtaplugin.model.archive.pack``) and ``archive_fts`` (a contentless
FTS5 index of subject, text and sender, with mtaplugin's tokenizer), one transaction per
batch.

Every connection is opened as mtaplugin opens its own SQLite database
(:func:`mtaplugin.db.make_engine`): write-ahead log, ``synchronous=NORMAL``, the log file
synced by :class:`mtaplugin.db.WalConnection` after each commit that wrote (outside the
write lock), ``busy_timeout`` of the packaged ``[database] timeout`` (5 s), foreign keys
on.  Plain :mod:`sqlite3`, no ORM.  A thread writing takes a connection from a pool and
gives it back after its commit (:class:`Journal`), as the milter's threads take theirs
from SQLAlchemy's pool: libmilter starts a thread for each SMTP session, so a connection
per thread would open a database connection per session.

``PATH`` may instead be the URL of a PostgreSQL database (``postgresql://...``): the same
tables there, written as mtaplugin writes on PostgreSQL (:mod:`mtaplugin.testing.noop_pg`).
"""

from __future__ import annotations

import queue
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtaplugin.db import WalConnection
from mtaplugin.testing import noop_pg
from mtaplugin.testing.benchdb import tree_cpu_seconds
from mtaplugin.testing.benchreport import Report

if TYPE_CHECKING:
    import psycopg

    #: a connection to the floor's database: its SQLite file or its PostgreSQL database
    Connection = WalConnection | psycopg.Connection[Any]

#: the floor's SQLite file, under a no-op milter's directory (the benches)
FLOOR_DB = "floor.db"
#: the packaged ``[database] timeout`` (seconds), SQLite's busy timeout
TIMEOUT = 5.0

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS journal (id INTEGER PRIMARY KEY, list_id INTEGER NOT NULL, "
    "raw BLOB NOT NULL, accepted_at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS archive (id INTEGER PRIMARY KEY, list_id INTEGER NOT NULL, "
    "raw BLOB NOT NULL, accepted_at REAL NOT NULL, archived_at REAL NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS archive_fts USING fts5(subject, body, author, "
    "content='', tokenize='unicode61 remove_diacritics 2')",
)
_INSERT = "INSERT INTO journal (list_id, raw, accepted_at) VALUES (?, ?, ?)"


def connect(path: Path | str, timeout: float = TIMEOUT) -> Connection:
    """A connection to the SQLite file or PostgreSQL database ``path`` with mtaplugin's
    durability settings."""
    if noop_pg.is_url(path):
        return noop_pg.connect(str(path), timeout)
    return connect_file(path, timeout)


def connect_file(path: Path | str, timeout: float = TIMEOUT) -> WalConnection:
    """A connection to the SQLite file ``path`` with mtaplugin's durability settings."""
    conn = sqlite3.connect(
        str(path), timeout=timeout, check_same_thread=False, factory=WalConnection
    )
    cur = conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    if str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        cur.execute("PRAGMA journal_mode=wal")
    main = next(p for _s, name, p in cur.execute("PRAGMA database_list") if name == "main")
    conn.wal_path = f"{main}-wal"
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
    return conn


def create(path: Path | str) -> None:
    """Make the floor's tables in ``path`` (nothing when they are there)."""
    conn = connect(path)
    try:
        for statement in noop_pg.SCHEMA if noop_pg.is_url(path) else SCHEMA:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


class Journal:
    """The journal of ``path``: each writer takes a connection of the pool (a new one
    when all are taken) and gives it back once committed."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.insert = noop_pg.INSERT if noop_pg.is_url(path) else _INSERT
        self.idle: queue.SimpleQueue[Connection] = queue.SimpleQueue()

    def record(self, raw: bytes, list_id: int = 1) -> None:
        """Journal ``raw`` and commit: on disk when this returns."""
        try:
            conn = self.idle.get_nowait()
        except queue.Empty:
            conn = connect(self.path)
        try:
            conn.execute(self.insert, (list_id, raw, time.time()))
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            self.idle.put(conn)


@dataclass(frozen=True)
class State:
    """What the floor's database holds."""

    #: posts in the archive
    archived: int
    #: journal rows not yet archived
    waiting: int
    #: the longest a post took from its commit to its archive commit (seconds)
    longest: float


def state(path: Path | str) -> State:
    conn = connect(path)
    try:
        archived, longest, waiting = conn.execute(
            "SELECT count(*), coalesce(max(archived_at - accepted_at), 0), "
            "(SELECT count(*) FROM journal) FROM archive"
        ).fetchall()[0]
        return State(int(archived), int(waiting), float(longest))
    finally:
        conn.close()


def settled(path: Path | str, timeout: float = 600.0) -> State:
    """``path``'s state once its journal is empty (the archiver caught up), or at
    ``timeout`` seconds as it is then."""
    deadline = time.monotonic() + timeout
    while (now := state(path)).waiting and time.monotonic() < deadline:
        time.sleep(0.1)
    return now


class Floor:
    """A required-work floor in a bench: the no-op milter ``pid`` (its archiver a child)
    journaling to ``path``.  Made once the milter has started (its CPU counts from
    then); :meth:`settle` inside the bench's directory, :meth:`rows` for its report."""

    def __init__(self, path: Path | str, pid: int) -> None:
        self.path, self.pid = path, pid
        self.cpu_start = tree_cpu_seconds(pid)
        self.got = State(0, 0, 0.0)
        self.cpu = 0.0

    def settle(self) -> None:
        """Wait for the archiver to catch up; keep the state and the CPU spent since."""
        self.got = settled(self.path)
        self.cpu = tree_cpu_seconds(self.pid) - self.cpu_start

    def summary(self, posts: int) -> dict[str, float]:
        """What :func:`rows` reports, as JSON (``posts``: how many the milter answered)."""
        got = self.got
        return {"posts": posts, "archived": got.archived, "waiting": got.waiting,
                "longest_s": round(got.longest, 3), "cpu_s": round(self.cpu, 3)}  # fmt: skip

    def rows(self, report: Report, title: str, posts: int) -> None:
        rows(report, title, self.summary(posts))


def rows(report: Report, title: str, summary: dict[str, float]) -> None:
    """A floor's rows (``summary``: :meth:`Floor.summary`): how many posts the archive
    holds of those answered, the longest a post waited for it, and the CPU of the milter
    and the archiver over the whole run (the warm-up and the archive's catch-up after
    the rounds included)."""
    posts = int(summary["posts"])
    report.add(f"floor: {title}, archived of {posts} answered (journal left "
               f"{int(summary['waiting'])})", summary["archived"], "posts")  # fmt: skip
    report.add(f"floor: {title}, longest journal → archive", summary["longest_s"], "s")
    report.add(f"floor: {title}, CPU per post, whole run (milter + archiver)",
               summary["cpu_s"] * 1000 / max(posts, 1), "ms")  # fmt: skip
