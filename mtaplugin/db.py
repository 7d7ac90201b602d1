"""Engine, sessions and migrations.

``connect(settings)`` builds the one engine of a process (called by
:func:`mtaplugin.wiring.build`, the composition root, and nowhere else).  ``upgrade(url)``
brings a database to the newest Alembic revision (``mtaplugin db upgrade``).  ``session_scope``
turns any failure to reach the database into :class:`DatabaseUnavailable`, which the SMTP
front ends answer with 451: the sender retries and nothing is lost.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.config import Settings
from mtaplugin.errors import DatabaseBusy, DatabaseUnavailable
from mtaplugin.i18n import _

MIGRATIONS = Path(__file__).parent / "migrations"
#: a SQLite database file mtaplugin makes: its user and group only, whatever the umask (it
#: holds DKIM private keys, password hashes and live tokens); SQLite gives the journal the
#: database file's mode
DATABASE_FILE_MODE = 0o640


def create_private(path: Path) -> None:
    """Make ``path`` an empty file (an empty SQLite database), mode
    :data:`DATABASE_FILE_MODE` or stricter (the umask), unless something is there already
    (a link too: never followed)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, flags, DATABASE_FILE_MODE))


def _sqlite_file(url: str) -> Path | None:
    """The file a read-write ``sqlite[+driver]:///`` URL names, or None."""
    scheme, sep, rest = url.partition(":///")
    if not sep or not scheme.startswith("sqlite") or "mode=" in rest:
        return None
    path = rest.partition("?")[0]
    return Path(path) if path and path != ":memory:" else None


class WalConnection(sqlite3.Connection):
    """A SQLite connection whose commits are on disk when ``commit()`` returns, synced
    after SQLite's write lock is let go.

    In write-ahead-log mode with ``synchronous=FULL`` SQLite syncs the log inside the
    commit, holding the one write lock through the disk's flush (about 3 ms here), so the
    writers of all processes commit one flush at a time: at most ~330 commits/s, whatever
    the cores.  With ``synchronous=NORMAL`` the commit only writes the log; this class then
    syncs the log file itself, with the lock already free.  The next writer goes on
    meanwhile, and flushes that overlap are done together by the file system (a group
    commit).  A commit still returns only once its log frames are on disk, as with FULL;
    a checkpoint syncs the log before copying it and the database after
    (https://sqlite.org/wal.html).  Only a transaction that wrote is synced."""

    #: the write-ahead log to sync after a commit ("" in rollback-journal mode: FULL)
    wal_path = ""
    #: a descriptor of that log, opened at the first commit that wrote and kept until the
    #: connection closes (SQLite removes the log only when the last connection to the
    #: database closes, so while this one is open the descriptor names the live log)
    _wal_fd = -1

    def commit(self) -> None:
        wrote = self.in_transaction
        super().commit()
        if wrote:
            self.sync_log()

    def sync_log(self) -> None:
        """Put the log's frames on disk (after a commit; or after a statement that was its
        own transaction, in the driver's autocommit mode)."""
        if self.wal_path:
            if self._wal_fd < 0:
                self._wal_fd = os.open(self.wal_path, os.O_RDONLY | os.O_CLOEXEC)
            # the log's data, and its size when it grew (what reading it back needs): as
            # SQLite syncs it itself on Linux, without the inode's times
            os.fdatasync(self._wal_fd)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._close_wal()

    def create_function(
        self,
        name: str,
        narg: int,
        func: Callable[..., Any] | None,
        *,
        deterministic: bool = False,
    ) -> None:
        """Defines nothing: mtaplugin's SQL calls no function written in Python, and one
        defined on a connection (SQLAlchemy's pysqlite dialect defines ``regexp()`` and
        ``floor()`` on each) kills the milter.  SQLite runs such a function, and its
        destructor when the connection closes (the pool closes the connections it has no
        room for), through ``PyGILState_Ensure``, which resumes the thread state CPython
        noted for the OS thread.  pymilter runs each SMTP session under a thread state of
        its own on whichever thread of libmilter's worker pool is free, and frees it on
        another: the noted state can be freed memory, and the milter died of SIGSEGV
        under load, its SMTP sessions answered 451 4.7.1 until ``serve`` restarted it
        (docs/known-limits.md)."""

    def _close_wal(self) -> None:
        fd, self._wal_fd = self._wal_fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self._close_wal()


def connect(settings: Settings) -> Engine:
    """The engine the ``[database]`` section describes (it connects on first use)."""
    return make_engine(
        settings.database.url,
        settings.database.timeout,
        prepared_statements=settings.database.prepared_statements,
        sqlite_wal=settings.database.sqlite_wal,
    )


def make_engine(
    url: str,
    timeout: float = 5.0,
    *,
    prepared_statements: bool = True,
    sqlite_wal: bool | None = None,
) -> Engine:
    """``prepared_statements=False``: PostgreSQL through a pooler in transaction mode
    (psycopg then prepares nothing on the server).  ``sqlite_wal``: put a SQLite database
    in write-ahead-log mode (``[database] sqlite_wal``), or in rollback-journal mode
    (False); None leaves the file's mode as it is (a tool or a test reading the database
    of a site must not change it)."""
    kwargs: dict[str, Any] = {"future": True}
    db_file = _sqlite_file(url)
    if db_file is not None:
        db_file.parent.mkdir(parents=True, exist_ok=True)
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {
            "timeout": timeout,
            "check_same_thread": False,
            "factory": WalConnection,
        }
    else:
        # application_name: the admin sees mtaplugin's sessions in pg_stat_activity.
        kwargs["connect_args"] = {
            "connect_timeout": max(1, int(timeout)),
            "application_name": "mtaplugin",
        }
        if not prepared_statements:
            kwargs["connect_args"]["prepare_threshold"] = None
        kwargs["pool_pre_ping"] = True
        kwargs["pool_size"] = 10
    engine = create_engine(url, **kwargs)
    if db_file is not None:

        @event.listens_for(engine, "do_connect")
        def _private_file(*_args: Any) -> None:
            # before SQLite makes the file (on the first connection) with the umask's mode
            create_private(db_file)

    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            if sqlite_wal is not None:
                _journal_mode(cur, "wal" if sqlite_wal else "delete")
            # A commit is on disk before the 250: in WAL mode synced by the connection
            # after the commit, outside the write lock (WalConnection); in rollback-journal
            # mode by SQLite, inside it.
            wal = str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
            if wal and db_file is not None and isinstance(dbapi_conn, WalConnection):
                dbapi_conn.wal_path = f"{_main_file(cur)}-wal"
                cur.execute("PRAGMA synchronous=NORMAL")
            else:
                cur.execute("PRAGMA synchronous=FULL")
            cur.close()

    return engine


def _main_file(cur: Any) -> str:
    """The main database file of the connection of ``cur`` (as SQLite names it)."""
    for _seq, name, path in cur.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return str(path)
    raise AssertionError("no main database")  # pragma: no cover


def _journal_mode(cur: Any, wanted: str) -> None:
    """Put the database file in ``wanted`` journal mode (a property of the file, so each
    process asks; already so: nothing is written).  A database another connection holds
    locked at that moment stays as it is until a later connection (never an error: either
    mode is safe)."""
    if str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() in {wanted, "memory"}:
        return
    with contextlib.suppress(sqlite3.OperationalError):
        cur.execute(f"PRAGMA journal_mode={wanted}")


def sessionmaker_for(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def as_trylater(exc: BaseException) -> Exception | None:
    """What a failure to reach the database (``exc``, as SQLAlchemy raises it) is to the
    SMTP front ends: a :class:`DatabaseBusy` or :class:`DatabaseUnavailable` (a 4xx);
    None for any other error."""
    if isinstance(exc, OperationalError):
        kind = DatabaseBusy if _sqlite_busy(exc) else DatabaseUnavailable
        return kind(_("the list database cannot be reached: {error}").format(error=_short(exc)))
    if isinstance(exc, PoolTimeout):
        return DatabaseUnavailable(
            _("the list database cannot be reached: {error}").format(error=_short(exc))
        )
    if isinstance(exc, DBAPIError):
        if type(getattr(exc, "orig", None)) is sqlite3.DatabaseError:
            # "file is not a database", a damaged file: nothing to decide with; retry later.
            return DatabaseUnavailable(
                _("the list database cannot be read: {error}").format(error=_short(exc))
            )
        if exc.connection_invalidated:
            return DatabaseUnavailable(
                _("the list database connection was lost: {error}").format(error=_short(exc))
            )
    return None


class _AsTryLater:
    """:func:`unavailable_as_trylater`'s context (no state: one for all threads; a class,
    not a generator, as it is entered at every RCPT and end of message)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        if exc is not None:
            converted = as_trylater(exc)
            if converted is not None:
                raise converted from exc


_AS_TRYLATER = _AsTryLater()


def unavailable_as_trylater() -> contextlib.AbstractContextManager[None]:
    """Turn any failure to reach the database into :class:`DatabaseUnavailable` (or
    :class:`DatabaseBusy`: SQLite's write lock refused; :func:`as_trylater`)."""
    return _AS_TRYLATER


@contextlib.contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A transaction: commit on success, roll back on error; an unreachable database
    becomes :class:`DatabaseUnavailable`."""
    with unavailable_as_trylater(), factory() as session, session.begin():
        yield session


@contextlib.contextmanager
def connection_scope(engine: Engine) -> Iterator[Connection]:
    """Like :func:`session_scope` for Core statements: the RCPT path's lighter transaction
    (an ORM session costs more than the query it runs)."""
    with unavailable_as_trylater(), engine.begin() as conn:
        yield conn


#: a transaction's connection, checked out and begun when first asked for
#: (:func:`lazy_connection_scope`)
Opener = Callable[[], Connection]


@contextlib.contextmanager
def lazy_connection_scope(engine: Engine) -> Iterator[Opener]:
    """Like :func:`connection_scope`, but the connection is checked out of the pool and
    its transaction begun only when the body first calls the opener it is given: the
    milter's usual decision (its lists' snapshots cached, nothing to store) takes no
    connection at all.  Committed when the body returns, rolled back when it raises."""
    closed = False
    with unavailable_as_trylater(), contextlib.ExitStack() as stack:
        conn: Connection | None = None

        def opened() -> Connection:
            nonlocal conn
            if closed:
                raise RuntimeError("the decision's transaction has ended")
            if conn is None:
                conn = stack.enter_context(engine.begin())
            return conn

        try:
            yield opened
        finally:
            closed = True


def engine_of(factory: sessionmaker[Session]) -> Engine:
    bind = factory.kw["bind"]
    assert isinstance(bind, Engine)
    return bind


def _sqlite_busy(exc: OperationalError) -> bool:
    """SQLITE_BUSY: another connection holds the write lock (after busy_timeout, or at once
    when waiting could deadlock: this transaction read first and must roll back)."""
    orig = getattr(exc, "orig", None)
    return isinstance(orig, sqlite3.OperationalError) and "database is locked" in str(orig)


def _short(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    return str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__


def alembic_config(url: str) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    from alembic import command

    db_file = _sqlite_file(url)
    if db_file is not None:
        db_file.parent.mkdir(parents=True, exist_ok=True)
        create_private(db_file)
    command.upgrade(alembic_config(url), revision)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def flushed_connection(session: Session) -> Connection:
    """``session``'s connection, once what the session holds unwritten is written: a
    prepared Core statement run there sees (and may refer to) those rows, as the ORM's
    own query would after its autoflush, without the ORM's cost per statement."""
    session.flush()
    return session.connection()


def upsert_insert(dialect_name: str) -> Any:
    """The ``insert`` construct of the dialect, with its ``on_conflict_do_*`` (an upsert):
    SQLite and PostgreSQL, the two databases mtaplugin runs on, share the syntax."""
    return postgresql.insert if dialect_name == "postgresql" else sqlite.insert
