"""The required-work floor of issue 34's benches (``noop_milter --journal --archiver``):
the post is committed to the journal, with mtaplugin's durability settings, before the
milter makes its edits and replies; the archiving drain moves it into a compressed copy
and a full-text index that finds a word of its body; a journal on a real SQLite file, and
on a real PostgreSQL server (the ``postgres`` fixture)."""

from __future__ import annotations

import itertools
import sqlite3
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import Milter
import psycopg
import pytest

from mtaplugin.db import WalConnection
from mtaplugin.testing import noop_archiver, noop_journal, noop_milter, noop_pg
from mtaplugin.testing.postgres import PostgresServer

POST = (
    b"From: =?utf-8?q?Ren=C3=A9e?= <member@bench.example>\r\n"
    b"To: bench@lists.bench\r\n"
    b"Subject: A typical post\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Transfer-Encoding: quoted-printable\r\n"
    b"\r\n"
    b"The caf=C3=A9 opens at nine; bring the marmalade.\r\n"
)


_databases = itertools.count()


def _committed(path: Path | str) -> int:
    """Journal rows another connection sees (committed ones only)."""
    if isinstance(path, str):  # PostgreSQL
        with psycopg.connect(path.replace("+psycopg", ""), autocommit=True) as pg:
            return int(pg.execute("SELECT count(*) FROM journal").fetchall()[0][0])
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT count(*) FROM journal").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def floor_url(postgres: PostgresServer) -> str:
    """The URL of a new, empty PostgreSQL database for a floor."""
    name = f"floor_{next(_databases)}"
    postgres.execute(f"CREATE DATABASE {name}")
    return postgres.url(name)


def _milter(path: Path | str, seen: list[tuple[str, int]]) -> Any:
    """A no-op milter journaling to ``path`` whose edits record how many rows were
    committed when each was made."""
    noop_journal.create(path)
    attributes: dict[str, Any] = {
        "to": ("member@bench.example", "2member@bench.example"),
        "decorate": True,
        "journal": noop_journal.Journal(path),
    }

    class Recorder(type("Milter", (noop_milter.SameCallbacks,), attributes)):  # type: ignore[misc]
        _protocol = 0

        def addheader(self, name: str, value: str, idx: int = -1) -> None:
            seen.append((f"addheader {name}", _committed(path)))

        def chgheader(self, name: str, idx: int, value: str) -> None:
            seen.append((f"chgheader {name}", _committed(path)))

        def replacebody(self, chunk: bytes) -> None:
            seen.append(("replacebody", _committed(path)))

        def addrcpt(self, rcpt: str, params: Any = None) -> None:
            seen.append((f"addrcpt {rcpt}", _committed(path)))

        def delrcpt(self, rcpt: str) -> None:
            seen.append((f"delrcpt {rcpt}", _committed(path)))

    return Recorder()


def _post(m: Any) -> int:
    m.envfrom("<member@bench.example>")
    m.envrcpt("<bench@lists.bench>")
    m.data()
    head, _, body = POST.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        name, _, value = line.decode().partition(": ")
        m.header(name, value)
    m.eoh()
    m.body(body)
    return int(m.eom())


def test_the_post_is_committed_before_any_edit_or_the_reply(tmp_path: Path) -> None:
    path = tmp_path / "floor.db"
    seen: list[tuple[str, int]] = []
    m = _milter(path, seen)
    assert _post(m) == Milter.ACCEPT
    # every edit, the last one just before eom returns its reply, came after the commit
    assert seen and all(n == 1 for _what, n in seen)
    assert [w for w, _n in seen if w.startswith("addrcpt")] == [
        "addrcpt <member@bench.example>",
        "addrcpt <2member@bench.example>",
    ]
    conn = sqlite3.connect(path)
    (raw,) = conn.execute("SELECT raw FROM journal").fetchone()
    assert raw == POST
    # the settings mtaplugin's own SQLite database has
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_writers_share_a_pool_of_connections_with_mtaplugins_settings(tmp_path: Path) -> None:
    path = tmp_path / "floor.db"
    noop_journal.create(path)
    journal = noop_journal.Journal(path)
    ready, go = threading.Barrier(3), threading.Event()
    sessions = []

    def write() -> None:  # three sessions at once: three connections
        ready.wait()
        go.wait(30)
        journal.record(b"Subject: x\r\n\r\nx\r\n")

    for _ in range(3):
        sessions.append(threading.Thread(target=write))
        sessions[-1].start()
    go.set()
    for t in sessions:
        t.join()
    for _ in range(5):  # later sessions, one at a time, take one of them again
        t = threading.Thread(target=journal.record, args=(b"Subject: y\r\n\r\ny\r\n",))
        t.start()
        t.join()
    conns = []
    while not journal.idle.empty():
        conns.append(journal.idle.get())
    assert 1 <= len(conns) <= 3
    for conn in conns:
        assert isinstance(conn, WalConnection)
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.wal_path == f"{path}-wal"
    assert _committed(path) == 8


def _five_drained(target: Path | str) -> None:
    """Five posts journaled in ``target``, then drained in batches of 2: all archived."""
    noop_journal.create(target)
    journal = noop_journal.Journal(target)
    for _ in range(5):
        journal.record(POST)
    assert noop_archiver.drain_all(target, batch=2) == 5
    state = noop_journal.state(target)
    assert (state.archived, state.waiting) == (5, 0) and state.longest >= 0


def test_the_archiver_drains_compresses_and_indexes(tmp_path: Path) -> None:
    path = tmp_path / "floor.db"
    _five_drained(path)
    conn = sqlite3.connect(path)
    raws = [zlib.decompress(r) for (r,) in conn.execute("SELECT raw FROM archive")]
    assert raws == [POST] * 5
    # a word of the decoded body (quoted-printable, UTF-8, accent folded), of the sender's
    # decoded name and of the subject
    for word in ("cafe", "marmalade", "renee", "typical"):
        found = conn.execute("SELECT count(*) FROM archive_fts WHERE archive_fts MATCH ?", (word,))
        assert found.fetchone()[0] == 5, word
    assert (
        conn.execute("SELECT count(*) FROM archive_fts WHERE archive_fts MATCH 'qzx'").fetchone()[0]
        == 0
    )
    conn.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_archiver_process_drains_until_stopped(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    target = str(tmp_path / "floor.db")
    if backend == "postgresql":
        target = request.getfixturevalue("floor_url")
    noop_journal.create(target)
    noop_journal.Journal(target).record(POST)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtaplugin.testing.noop_archiver", target, "--poll", "0.05"]
    )
    try:
        deadline = time.monotonic() + 60
        while noop_journal.state(target).archived < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        noop_journal.Journal(target).record(POST)
        while noop_journal.state(target).archived < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.terminate()
        assert proc.wait(60) == 0
    got = noop_journal.state(target)
    assert (got.archived, got.waiting) == (2, 0)


def test_on_postgresql_the_post_is_committed_before_any_edit_or_the_reply(
    floor_url: str,
) -> None:
    seen: list[tuple[str, int]] = []
    m = _milter(floor_url, seen)
    assert _post(m) == Milter.ACCEPT
    # another connection saw the row at every edit, the last one just before the reply
    assert len(seen) > 5 and all(n == 1 for _what, n in seen)
    with psycopg.connect(floor_url.replace("+psycopg", "")) as pg:
        assert pg.execute("SELECT raw FROM journal").fetchall() == [(POST,)]
    # the pooled connection has mtaplugin's session: its name, not in autocommit, and the
    # server's synchronous_commit (mtaplugin sets none); its transaction was committed
    conn = m.journal.idle.get_nowait()
    assert isinstance(conn, psycopg.Connection) and not conn.autocommit
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    name, sync, server = conn.execute(
        "SELECT current_setting('application_name'), current_setting('synchronous_commit'), "
        "reset_val FROM pg_settings WHERE name = 'synchronous_commit'"
    ).fetchall()[0]
    assert (name, sync) == ("mtaplugin", server)
    conn.rollback()


def test_on_postgresql_the_archiver_drains_compresses_and_indexes(floor_url: str) -> None:
    _five_drained(floor_url)
    with psycopg.connect(floor_url.replace("+psycopg", "")) as pg:
        raws = [zlib.decompress(r) for (r,) in pg.execute("SELECT raw FROM archive ORDER BY id")]
        assert raws == [POST] * 5
        # a word of the decoded body (quoted-printable, UTF-8, stemmed), of the sender's
        # decoded name, of the address and of the subject, each at mtaplugin's weight
        for word, weight in (("marmalade", "D"), ("café", "D"), ("renée", "B"),
                             ("bench", "C"), ("typical", "A")):  # fmt: skip
            (found,) = pg.execute(
                "SELECT count(*) FROM archive_fts JOIN archive a ON a.id = message_id "
                "WHERE doc @@ to_tsquery('english', %s)",
                (f"{word}:{weight}",),
            ).fetchall()[0]
            assert found == 5, word
        query = "SELECT count(*) FROM archive_fts WHERE doc @@ plainto_tsquery('english', 'qzx')"
        assert pg.execute(query).fetchall()[0][0] == 0
        # the index a search uses
        (index,) = pg.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'archive_fts' AND "
            "indexname = 'ix_archive_fts_doc'"
        ).fetchall()[0]
        assert "gin (doc)" in index


def test_the_benches_pg_durable_gives_the_server_postgresqls_own_durability(
    lab_root: Path,
) -> None:
    server = PostgresServer(lab_root / f"pg-durable-{next(_databases)}").start()
    try:
        assert server.query("SHOW fsync") == [("off",)]  # the throw-away server's
        noop_pg.make_durable(server)
        for name, value in noop_pg.DURABLE.items():
            assert server.query(f"SHOW {name}") == [(value,)], name
    finally:
        server.stop()
