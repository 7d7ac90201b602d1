"""The SQLite database mtaplugin makes holds DKIM private keys, password hashes and live
reset and moderation tokens: it is made mode 0640 whatever the umask of the process that
makes it (security review M8: a manual install without ``UMask=`` made it 0644, readable
by every local user), and so are its journal, a backup and a restored database."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from mtaplugin import config
from mtaplugin.backup import backup, restore
from mtaplugin.db import connect, create_private, make_engine, upgrade


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """The default umask of a shell or of a unit without UMask=."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def settings_for(db_file: Path, tmp_path: Path) -> config.Settings:
    return config.load(
        None,
        environ={
            "MTAPLUGIN_DATABASE_URL": f"sqlite:///{db_file}",
            "MTAPLUGIN_MILTER_SOCKET": f"unix:{tmp_path}/milter.sock",
            "MTAPLUGIN_LOOKUP_SOCKET": f"unix:{tmp_path}/lookup.sock",
            "MTAPLUGIN_API_LISTEN": "127.0.0.1:1",
        },
    )


def test_db_upgrade_makes_a_database_other_users_cannot_read(tmp_path: Path) -> None:
    db_file = tmp_path / "state" / "mtaplugin.db"
    upgrade(f"sqlite:///{db_file}")
    assert mode(db_file) == 0o640


def test_the_first_connection_makes_a_database_other_users_cannot_read(tmp_path: Path) -> None:
    db_file = tmp_path / "mtaplugin.db"
    engine = make_engine(f"sqlite:///{db_file}")
    try:
        assert not db_file.exists()  # the engine connects on first use, not before
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE t (x)"))
            conn.execute(text("INSERT INTO t VALUES ('-----BEGIN PRIVATE KEY-----')"))
            # SQLite gives the rollback journal the database file's mode
            journal = db_file.with_name(db_file.name + "-journal")
            assert journal.exists() and mode(journal) == 0o640
        assert mode(db_file) == 0o640
    finally:
        engine.dispose()


def test_a_stricter_umask_is_kept(tmp_path: Path) -> None:
    os.umask(0o077)
    db_file = tmp_path / "mtaplugin.db"
    upgrade(f"sqlite:///{db_file}")
    assert mode(db_file) == 0o600


def test_an_existing_file_or_link_is_left_as_it_is(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    link = tmp_path / "mtaplugin.db"
    link.symlink_to(target)  # dangling: O_CREAT alone would create the target
    create_private(link)
    assert link.is_symlink() and not target.exists()


def test_backup_and_restore_write_files_other_users_cannot_read(tmp_path: Path) -> None:
    db_file = tmp_path / "state" / "mtaplugin.db"
    upgrade(f"sqlite:///{db_file}")
    settings = settings_for(db_file, tmp_path)
    copy = tmp_path / "backups" / "lists.db"
    backup(settings, copy)
    assert mode(copy) == 0o640
    db_file.unlink()
    restore(settings, copy)
    assert mode(db_file) == 0o640


def journal_mode(db_file: Path) -> str:
    engine = make_engine(f"sqlite:///{db_file}")  # leaves the file's mode as it is
    try:
        with engine.connect() as conn:
            return str(conn.execute(text("PRAGMA journal_mode")).scalar())
    finally:
        engine.dispose()


def test_the_site_s_database_is_in_wal_mode_and_its_log_is_private(tmp_path: Path) -> None:
    """``[database] sqlite_wal`` (on by default): one sync per commit instead of the
    rollback journal's several, readers never wait for the writer; the -wal and -shm files
    get the database file's mode; a backup taken while the log holds the newest rows has
    them."""
    db_file = tmp_path / "state" / "mtaplugin.db"
    upgrade(f"sqlite:///{db_file}")
    assert journal_mode(db_file) == "delete"  # what SQLite makes; nothing changed it yet
    settings = settings_for(db_file, tmp_path)
    assert settings.database.sqlite_wal
    engine = connect(settings)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE t (x)"))
            conn.execute(text("INSERT INTO t VALUES ('-----BEGIN PRIVATE KEY-----')"))
        for suffix in ("-wal", "-shm"):
            log = db_file.with_name(db_file.name + suffix)
            assert log.exists() and mode(log) == 0o640, suffix
        assert journal_mode(db_file) == "wal"
        copy = tmp_path / "backups" / "lists.db"
        backup(settings, copy)  # the row is in the -wal file still (the engine is open)
    finally:
        engine.dispose()
    engine = make_engine(f"sqlite:///{copy}")
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT x FROM t")).scalar() == "-----BEGIN PRIVATE KEY-----"
    finally:
        engine.dispose()


def test_sqlite_wal_false_puts_the_database_back_in_rollback_journal_mode(
    tmp_path: Path,
) -> None:
    """For a reader that cannot open the -shm file (Postfix's sqlite: table read by the
    unprivileged postfix user)."""
    db_file = tmp_path / "mtaplugin.db"
    upgrade(f"sqlite:///{db_file}")
    engine = connect(settings_for(db_file, tmp_path))
    with engine.connect():
        pass
    engine.dispose()
    assert journal_mode(db_file) == "wal"
    off = config.load(
        None,
        environ={
            "MTAPLUGIN_DATABASE_URL": f"sqlite:///{db_file}",
            "MTAPLUGIN_DATABASE_SQLITE_WAL": "false",
            "MTAPLUGIN_MILTER_SOCKET": f"unix:{tmp_path}/milter.sock",
            "MTAPLUGIN_LOOKUP_SOCKET": f"unix:{tmp_path}/lookup.sock",
            "MTAPLUGIN_API_LISTEN": "127.0.0.1:1",
        },
    )
    assert not off.database.sqlite_wal
    engine = connect(off)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "delete"
            assert conn.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL
    finally:
        engine.dispose()
    assert journal_mode(db_file) == "delete"
