"""SQLite in WAL mode: a commit is on disk when it returns, and the flush happens after the
write lock is free, so that concurrent writers share the disk's flushes
(``mtaplugin.db.WalConnection``).  A power cut cannot be made here, so the flush is
observed where it is asked of the kernel (``os.fdatasync``), and the lock is probed from a
second connection while it runs."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from mtaplugin.db import make_engine


@pytest.fixture
def flushed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Each flush (fdatasync) of the test's files: (the file's name, whether another connection
    could take SQLite's write lock at that moment)."""
    seen: list[tuple[str, bool]] = []
    real_sync = os.fdatasync

    def spy(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path.endswith("-wal"):
            probe = sqlite3.connect(path.removesuffix("-wal"), timeout=0)
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
                free = True
            except sqlite3.OperationalError:
                free = False
            finally:
                probe.close()
            seen.append((Path(path).name, free))
        real_sync(fd)

    monkeypatch.setattr(os, "fdatasync", spy)
    return seen


def test_a_wal_commit_is_flushed_after_the_write_lock_is_free(
    tmp_path: Path, flushed: list[tuple[str, bool]]
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/lists.db", sqlite_wal=True)
    with engine.begin() as conn:
        assert conn.execute(text("PRAGMA synchronous")).scalar() == 1  # NORMAL: no flush inside
        conn.execute(text("CREATE TABLE post (n INTEGER)"))
    flushed.clear()
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO post VALUES (1)"))
    assert flushed == [("lists.db-wal", True)]
    engine.dispose()


def test_a_transaction_that_only_read_is_not_flushed(
    tmp_path: Path, flushed: list[tuple[str, bool]]
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/lists.db", sqlite_wal=True)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE post (n INTEGER)"))
    flushed.clear()
    with engine.begin() as conn:
        assert conn.execute(text("SELECT count(*) FROM post")).scalar() == 0
    assert flushed == []
    engine.dispose()


def test_a_failed_commit_is_not_flushed_and_stores_nothing(
    tmp_path: Path, flushed: list[tuple[str, bool]]
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/lists.db", sqlite_wal=True)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE post (n INTEGER UNIQUE)"))
        conn.execute(text("INSERT INTO post VALUES (1)"))
    flushed.clear()
    with pytest.raises(Exception, match="UNIQUE"), engine.begin() as conn:
        conn.execute(text("INSERT INTO post VALUES (2)"))
        conn.execute(text("INSERT INTO post VALUES (1)"))
    assert flushed == []
    with engine.begin() as conn:
        assert conn.execute(text("SELECT count(*) FROM post")).scalar() == 1
    engine.dispose()


def test_a_rollback_journal_database_is_flushed_by_sqlite_inside_the_commit(
    tmp_path: Path, flushed: list[tuple[str, bool]]
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/lists.db", sqlite_wal=False)
    with engine.begin() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "delete"
        assert conn.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL
        conn.execute(text("CREATE TABLE post (n INTEGER)"))
        conn.execute(text("INSERT INTO post VALUES (1)"))
    assert flushed == []  # (no log of ours to flush: SQLite did it)
    engine.dispose()


def _wal_descriptors(directory: Path) -> int:
    """How many of this process's descriptors name a write-ahead log in ``directory``."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # (the listing's own descriptor, closed since)
            name = os.readlink(f"/proc/self/fd/{fd}")
            found += name.startswith(str(directory)) and name.endswith("-wal")
    return found


def test_each_commit_is_flushed_through_one_kept_descriptor_closed_with_the_connection(
    tmp_path: Path, flushed: list[tuple[str, bool]]
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/lists.db", sqlite_wal=True)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE post (n INTEGER)"))
    flushed.clear()
    for n in range(3):
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO post VALUES (:n)"), {"n": n})
    assert flushed == [("lists.db-wal", True)] * 3
    assert _wal_descriptors(tmp_path) == 2  # SQLite's own, and the one kept for flushing
    engine.dispose()
    assert _wal_descriptors(tmp_path) == 0
