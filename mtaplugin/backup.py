"""Backing up and restoring the list database.

SQLite: :func:`backup` copies the live database with SQLite's online backup API into a new
file beside the target, checks the copy (``PRAGMA integrity_check``, its schema revision)
and renames it into place, so that a half-written backup never carries the target's name.
The copy is one consistent snapshot: it holds a read lock while it copies, and a writer
(the milter, the worker) waits for it up to ``database.timeout`` seconds.

:func:`restore` writes a backup over the configured database, through the same API (so
that SQLite's locks are honoured), after keeping the current database as
``<database>.before-restore``.  It refuses while mtaplugin is running: while any of its
sockets (milter, lookup, LMTP, Exim, the REST API) answers, since a process holding the
old database open would go on writing into the restored one.

PostgreSQL: mtaplugin does not dump it itself (the server's own pg_dump matches its
version and reads ~/.pgpass); :func:`postgresql_advice` says what to run.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from mtaplugin.config import InetSocket, Settings, UnixSocket, sqlite_path
from mtaplugin.db import create_private
from mtaplugin.errors import InvalidInput, MtapluginError
from mtaplugin.i18n import _

#: suffix of the copy of the current database that :func:`restore` keeps
BEFORE_RESTORE = ".before-restore"


@dataclass(frozen=True)
class Copied:
    """What a backup or a restore wrote: the file, its size and its schema revision."""

    path: Path
    size: int
    revision: str | None


def database_file(settings: Settings) -> Path | None:
    """The SQLite file of the settings, or None (PostgreSQL)."""
    return sqlite_path(settings.database.url)


def _check(conn: sqlite3.Connection, what: str) -> str | None:
    """``integrity_check`` of a SQLite database, and its Alembic revision."""
    try:
        ok = conn.execute("PRAGMA integrity_check").fetchone()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(what, _("not a SQLite database: {error}").format(error=exc)) from None
    if not ok or ok[0] != "ok":
        raise InvalidInput(what, _("the database is damaged: {error}").format(error=ok))
    if "alembic_version" not in tables:
        raise InvalidInput(what, _("not an mtaplugin database (no schema revision)"))
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return str(row[0]) if row else None


def _copy(source: Path, target: Path, timeout: float, what: str) -> Copied:
    """``source`` → a new file beside ``target``, checked, then renamed onto ``target``."""
    partial = target.with_name(f".{target.name}.partial")
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    src = sqlite3.connect(_read_only(source), uri=True, timeout=timeout)
    try:
        create_private(partial)  # the copy holds the DKIM keys too
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst)
            revision = _check(dst, what)
        finally:
            dst.close()
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        raise
    finally:
        src.close()
    os.replace(partial, target)
    return Copied(target, target.stat().st_size, revision)


def backup(settings: Settings, target: Path) -> Copied:
    """A consistent copy of the live SQLite database at ``target`` (not overwritten)."""
    db_file = database_file(settings)
    if db_file is None:
        raise MtapluginError(postgresql_advice(settings, target))
    if not db_file.is_file():
        raise InvalidInput("database.url", _("no such file: {path}").format(path=db_file))
    if target.exists():
        raise InvalidInput("FILE", _("{path} exists already").format(path=target))
    if target.resolve() == db_file.resolve():
        raise InvalidInput("FILE", _("that is the database itself"))
    target.parent.mkdir(parents=True, exist_ok=True)
    return _copy(db_file, target, settings.database.timeout, "database.url")


def running(settings: Settings) -> list[str]:
    """The sockets of mtaplugin's processes that answer now (empty: none runs here)."""
    found: list[str] = []
    for name in ("milter", "lookup", "lmtp", "exim"):
        sock = getattr(settings, name).socket
        if _answers(sock):
            found.append(f"{name}: {sock}")
    host, _sep, port = settings.api.listen.rpartition(":")
    if port.isdigit() and _answers_tcp(host.strip("[]"), int(port)):
        found.append(f"api: {settings.api.listen}")
    return found


def _answers(sock: UnixSocket | InetSocket) -> bool:
    if isinstance(sock, UnixSocket):
        return _answers_unix(sock.path)
    return _answers_tcp(sock.host, sock.port)


def _answers_unix(path: str) -> bool:
    if not os.path.exists(path):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        try:
            s.connect(path)
        except OSError:
            return False
        return True


def _answers_tcp(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def restore(settings: Settings, source: Path) -> Copied:
    """Write the backup ``source`` over the SQLite database; the current one is kept as
    ``<database>.before-restore``.  Refused while mtaplugin runs."""
    db_file = database_file(settings)
    if db_file is None:
        raise MtapluginError(postgresql_advice(settings, source, restore=True))
    if not source.is_file():
        raise InvalidInput("FILE", _("no such file: {path}").format(path=source))
    busy = running(settings)
    if busy:
        raise MtapluginError(
            _(
                "mtaplugin is running (these answer: {sockets}); stop it first "
                "(systemctl stop mtaplugin), then restore"
            ).format(sockets=", ".join(busy))
        )
    # the backup itself must be whole before anything is touched
    with contextlib.closing(sqlite3.connect(_read_only(source), uri=True)) as conn:
        _check(conn, "FILE")
    if db_file.is_file():
        _copy(db_file, db_file.with_name(db_file.name + BEFORE_RESTORE), 5.0, "database.url")
    db_file.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(_read_only(source), uri=True)
    try:
        create_private(db_file)
        dst = sqlite3.connect(db_file, timeout=settings.database.timeout)
        try:
            src.backup(dst)
            revision = _check(dst, "database.url")
        finally:
            dst.close()
    finally:
        src.close()
    return Copied(db_file, db_file.stat().st_size, revision)


def postgresql_advice(settings: Settings, path: Path, *, restore: bool = False) -> str:
    """What to run for a PostgreSQL database (mtaplugin does not dump it itself)."""
    url = make_url(settings.database.url)
    where = " ".join(
        part
        for part in (
            f"--host={url.host}" if url.host else "",
            f"--port={url.port}" if url.port else "",
            f"--username={url.username}" if url.username else "",
        )
        if part
    )
    db = url.database or ""
    hosts = url.query.get("host")
    if hosts:
        # a primary and its standbys (host=a:5432&host=b:5432): pg_dump and pg_restore
        # take them as a libpq connection string, with the URL's target_session_attrs
        names, ports = [], []
        for entry in [hosts] if isinstance(hosts, str) else list(hosts):
            name, _sep, port = entry.rpartition(":") if ":" in entry else (entry, "", "")
            names.append(name)
            ports.append(port)
        conninfo = [f"host={','.join(names)}", f"dbname={db}"]
        if any(ports):
            conninfo.insert(1, f"port={','.join(ports)}")
        if url.username:
            conninfo.append(f"user={url.username}")
        attrs = url.query.get("target_session_attrs")
        if restore:
            attrs = "read-write"
        if attrs:
            conninfo.append(f"target_session_attrs={attrs}")
        where, db = "", shlex.quote(" ".join(conninfo))
    if restore:
        return _(
            "the database is PostgreSQL: mtaplugin does not restore it itself. Stop "
            "mtaplugin, then run: pg_restore --clean --if-exists {where} --dbname={db} {path}"
        ).format(where=where, db=db, path=path)
    return _(
        "the database is PostgreSQL: mtaplugin does not dump it itself. Run (safe while "
        "mtaplugin runs): pg_dump --format=custom {where} --file={path} {db}"
    ).format(where=where, db=db, path=path)


def _read_only(path: Path) -> str:
    """A SQLite URI opening ``path`` read-only (any character in the name is quoted)."""
    return f"{path.resolve().as_uri()}?mode=ro"
