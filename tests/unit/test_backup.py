"""``mtaplugin backup`` / ``restore`` on a real SQLite database that another process
writes to while it is copied; the PostgreSQL advice."""

from __future__ import annotations

import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from mtaplugin import config
from mtaplugin.backup import BEFORE_RESTORE, backup, restore, running
from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.errors import InvalidInput, MtapluginError
from mtaplugin.model import AuditEntry
from tests.helpers import run_mtaplugin


def audit_rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM audit_log").fetchone()[0])


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[Path, config.Settings, Callable[[], None]]]:
    """A migrated SQLite database with a writer committing a row at a time until told to
    stop (as the milter and the worker do)."""
    db_file = tmp_path / "state" / "mtaplugin.db"
    url = f"sqlite:///{db_file}"
    upgrade(url)
    settings = config.load(
        None,
        environ={
            "MTAPLUGIN_DATABASE_URL": url,
            "MTAPLUGIN_MILTER_SOCKET": f"unix:{tmp_path}/milter.sock",
            "MTAPLUGIN_LOOKUP_SOCKET": f"unix:{tmp_path}/lookup.sock",
            "MTAPLUGIN_API_LISTEN": "127.0.0.1:1",
        },
    )
    engine = make_engine(url, timeout=10)
    sessions = sessionmaker_for(engine)
    stopping = threading.Event()
    written = threading.Event()

    def write() -> None:
        n = 0
        while not stopping.is_set():
            with sessions.begin() as s:
                s.add(AuditEntry(actor="test", action="write", detail={"n": n}))
            n += 1
            if n >= 20:
                written.set()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    written.wait(30)

    def halt() -> None:
        stopping.set()
        writer.join(30)

    try:
        yield db_file, settings, halt
    finally:
        halt()
        engine.dispose()


def test_backup_while_written_to_is_whole_and_consistent(live, tmp_path: Path):
    db_file, settings, stop = live
    before = audit_rows(db_file)
    target = tmp_path / "backups" / "lists.db"
    r = run_mtaplugin("backup", str(target), env={"MTAPLUGIN_DATABASE_URL": settings.database.url})
    assert r.returncode == 0, r.stderr
    assert str(target) in r.stdout and "schema" in r.stdout
    stop()
    copied = audit_rows(target)
    # a snapshot taken during the writes: at least what was there, at most what came after
    assert before <= copied <= audit_rows(db_file)
    with sqlite3.connect(target) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
    assert not list(target.parent.glob(".*partial"))


def test_backup_does_not_overwrite_a_file(live, tmp_path: Path):
    _db, settings, _stop = live
    target = tmp_path / "there.db"
    target.write_bytes(b"keep")
    with pytest.raises(InvalidInput) as info:
        backup(settings, target)
    assert info.value.field == "FILE"
    assert target.read_bytes() == b"keep"


def test_restore_refuses_while_mtaplugin_runs(live, tmp_path: Path):
    db_file, settings, stop = live
    stop()
    saved = backup(settings, tmp_path / "saved.db")
    milter = settings.milter.socket
    assert isinstance(milter, config.UnixSocket)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listening:
        listening.bind(milter.path)
        listening.listen(1)
        assert running(settings) == [f"milter: {milter}"]
        before = db_file.read_bytes()
        with pytest.raises(MtapluginError, match="stop it first"):
            restore(settings, saved.path)
        assert db_file.read_bytes() == before


def test_restore_puts_the_backup_back_and_keeps_the_current_one(live, tmp_path: Path):
    db_file, settings, stop = live
    stop()
    saved = backup(settings, tmp_path / "saved.db")
    in_backup = audit_rows(saved.path)
    engine = make_engine(settings.database.url)
    with sessionmaker_for(engine).begin() as s:
        s.add(AuditEntry(actor="test", action="after the backup", detail={}))
    engine.dispose()
    current = audit_rows(db_file)
    assert current == in_backup + 1
    env = {"MTAPLUGIN_DATABASE_URL": settings.database.url, "MTAPLUGIN_API_LISTEN": "127.0.0.1:1"}
    # without --yes, nothing happens
    asked = run_mtaplugin("restore", str(saved.path), env=env)
    assert asked.returncode == 1 and "--yes" in asked.stderr
    assert audit_rows(db_file) == current
    done = run_mtaplugin("restore", str(saved.path), "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert audit_rows(db_file) == in_backup
    assert audit_rows(db_file.with_name(db_file.name + BEFORE_RESTORE)) == current
    engine = make_engine(settings.database.url)
    with sessionmaker_for(engine)() as s:
        assert s.scalar(select(func.count()).select_from(AuditEntry)) == in_backup
    engine.dispose()


def test_restore_refuses_a_file_that_is_not_an_mtaplugin_database(live, tmp_path: Path):
    db_file, settings, stop = live
    stop()
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    before = audit_rows(db_file)
    with pytest.raises(InvalidInput) as info:
        restore(settings, junk)
    assert info.value.field == "FILE"
    assert audit_rows(db_file) == before


def test_postgresql_gets_the_pg_dump_to_run(tmp_path: Path):
    url = "postgresql+psycopg://lists:secret@db.example:5433/mtaplugin"
    r = run_mtaplugin("backup", str(tmp_path / "x.dump"), env={"MTAPLUGIN_DATABASE_URL": url})
    assert r.returncode == 1
    assert "pg_dump --format=custom --host=db.example --port=5433 --username=lists" in r.stderr
    assert f"--file={tmp_path / 'x.dump'} mtaplugin" in r.stderr
    assert "secret" not in r.stderr
    assert not (tmp_path / "x.dump").exists()


def test_a_multi_host_url_gets_a_connection_string_naming_every_host(tmp_path: Path):
    # a primary and its standby (docs/reliability.md): pg_dump must not fall back to the
    # local socket for want of --host
    url = (
        "postgresql+psycopg://lists@/mtaplugin?host=db1.example:5432&host=db2.example:5433"
        "&target_session_attrs=read-write"
    )
    r = run_mtaplugin("backup", str(tmp_path / "x.dump"), env={"MTAPLUGIN_DATABASE_URL": url})
    assert r.returncode == 1
    assert (
        "'host=db1.example,db2.example port=5432,5433 dbname=mtaplugin user=lists "
        "target_session_attrs=read-write'"
    ) in r.stderr, r.stderr
    assert "--host" not in r.stderr
