"""SQLite connections kept between uses on the milter's hot path: the RCPT lookup's read
(:meth:`KeptConnections.rows`) and the end-of-message decision's transaction
(:meth:`KeptConnections.transaction`), instead of a pool checkout, a SQLAlchemy
``Connection`` and a reset on return for each.

Each connection is made by the engine's pool (so with its pragmas, and as a
:class:`~mtaplugin.db.WalConnection`: a commit that wrote is on disk before it returns)
and detached from it.  A connection is used by one thread at a time: taken from the free
ones, given back when done (``list.pop``/``append`` are atomic: no lock), never given back
inside a transaction.  One that fails, or cannot be opened, is closed, never kept, and the
error is raised as SQLAlchemy raises it, so that a database that cannot answer is still a
4xx.  On any other database (PostgreSQL) the pool serves both, as before."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from sqlalchemy import Connection, Engine, Insert, Select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.pool import PoolProxiedConnection

from mtaplugin.db import Opener, as_trylater, lazy_connection_scope
from mtaplugin.lists.driver import bound, compiled, driver_rows, insert_args


class KeptConnections:
    """The kept connections of one engine (``kept``: on SQLite only)."""

    #: the most decisions' transactions at once (the bound the pool put on them: its
    #: size and overflow); one more waits its turn, as it waited for the pool, rather
    #: than join the writers polling SQLite's write lock in its busy handler
    WRITERS = 15
    #: the most connections kept free between uses: every writer's, and a few for the
    #: RCPT lookups beside them.  A connection given back beyond them is closed; with
    #: only the pool's size (5) kept, a loaded milter opened and closed connections all
    #: the time (each open runs the pragmas): about 6 % of its CPU under bench/load.py,
    #: and 12 % fewer posts answered
    KEEP = WRITERS + 5

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.kept = engine.dialect.name == "sqlite"
        #: the connections not in use
        self._free: list[PoolProxiedConnection] = []
        #: a turn for each transaction in use (:meth:`KeptTransaction._taken`)
        self.turns = threading.BoundedSemaphore(self.WRITERS)
        #: how long a transaction waits for its turn (the pool's timeout) before the
        #: database counts as unreachable (a 4xx)
        self.wait = float(getattr(engine.pool, "timeout", lambda: 30.0)())

    def rows(self, statement: Select[*tuple[Any, ...]], params: dict[str, Any]) -> list[Any]:
        """The rows of the RCPT lookup's one statement.  On SQLite a read in the driver's
        autocommit mode, which holds nothing once its rows are fetched (a connection found
        in a transaction is rolled back); elsewhere on a connection of the pool (no
        transaction begun: a read the driver began ends with the connection's return)."""
        if not self.kept:
            with self.engine.connect() as conn:
                return driver_rows(conn, statement, params)
        error = self.engine.dialect.loaded_dbapi.Error
        sql, order = compiled(statement, self.engine.dialect)
        args = bound(order, params)
        fairy: PoolProxiedConnection | None = None
        try:
            # a connection that cannot be opened (no file, no descriptor left, the
            # pragmas' lock) is a database that cannot answer, as any other error here
            fairy = self._take()
            dbapi: Any = fairy.dbapi_connection
            found = list(dbapi.execute(sql, args).fetchall())
            if dbapi.in_transaction:
                dbapi.rollback()
        except error as exc:
            if fairy is not None:
                _drop(fairy.dbapi_connection)
            raise DBAPIError.instance(sql, args, exc, error, connection_invalidated=True) from exc
        except BaseException:
            if fairy is not None:
                _drop(fairy.dbapi_connection)
            raise
        self._give(fairy)
        return found

    def transaction(self) -> contextlib.AbstractContextManager[Opener]:
        """One decision's transaction, begun when first used, committed when the body
        returns (before the answer), rolled back when it raises; an unreachable database
        becomes :class:`~mtaplugin.errors.DatabaseUnavailable`.  On SQLite a
        :class:`KeptTransaction`; elsewhere :func:`~mtaplugin.db.lazy_connection_scope`'s."""
        if not self.kept:
            return lazy_connection_scope(self.engine)
        return _KeptScope(KeptTransaction(self))

    def close(self) -> None:
        """Close the free connections (:meth:`ListEngine.close
        <mtaplugin.engine.ListEngine.close>`).  Not an end: a use after this makes a
        connection again, and one in use now is kept when given back."""
        while True:
            try:
                fairy = self._free.pop()
            except IndexError:
                return
            _drop(fairy.dbapi_connection)

    def _take(self) -> PoolProxiedConnection:
        """A free connection, or a new one (a driver error when it cannot be opened)."""
        try:
            return self._free.pop()
        except IndexError:
            fairy = self.engine.raw_connection()
            fairy.detach()
            return fairy

    def _give(self, fairy: PoolProxiedConnection) -> None:
        if len(self._free) < self.KEEP:
            self._free.append(fairy)
        else:
            _drop(fairy.dbapi_connection)


class KeptTransaction:
    """One decision's transaction on a kept SQLite connection, taken when first used:
    :meth:`insert` writes a row on the driver's cursor (the accepted post's journal row,
    the usual decision's only statement: no SQLAlchemy ``Connection`` at all), and
    calling it gives the same transaction as a ``Connection`` (the ORM and Core: a held
    post, notices, a snapshot to load).  Used by one thread (the decision's)."""

    __slots__ = ("_conn", "_dbapi", "_ended", "_fairy", "_owner", "_rows", "_turn")

    def __init__(self, owner: KeptConnections) -> None:
        self._owner = owner
        self._fairy: PoolProxiedConnection | None = None
        #: the driver's connection (kept here: SQLAlchemy forgets it when it invalidates)
        self._dbapi: Any = None
        self._conn: Connection | None = None
        self._ended = False
        self._turn = False
        #: rows inserted while nothing else was run (:meth:`insert`), not written yet
        self._rows: list[tuple[str, Any]] = []

    def __call__(self) -> Connection:
        conn = self._conn
        if conn is None:
            fairy = self._taken()
            conn = self._conn = Connection(self._owner.engine, connection=fairy)
            conn.begin()  # (the driver begins SQLite's transaction at the first write)
            self._write_rows()  # first, in this transaction, as they came
        elif self._ended:
            raise RuntimeError("the decision's transaction has ended")
        return conn

    def insert(self, statement: Insert, params: dict[str, Any]) -> None:
        """One row written by one of the hot path's inserts (every column given) in this
        transaction, on the driver's cursor (:func:`~mtaplugin.lists.driver.insert_args`);
        a driver error raised as SQLAlchemy raises it.

        While the transaction has run nothing else, the row is written at its end: when
        it is the only statement (a member's post: its journal row), it is its own
        transaction inside SQLite, and the write lock is held only while SQLite runs it.
        A statement run in between writes the rows first, in the transaction."""
        sql, args = insert_args(statement, self._owner.engine.dialect, params)
        if self._ended:
            raise RuntimeError("the decision's transaction has ended")
        self._rows.append((sql, args))
        if self._conn is not None:
            self._write_rows()

    def _write_rows(self) -> None:
        rows, self._rows = self._rows, []
        if not rows:
            return
        self._taken()
        dbapi = self._dbapi
        for sql, args in rows:
            self._execute(dbapi, sql, args)

    def _execute(self, dbapi: Any, sql: str, args: Any) -> None:
        dialect = self._owner.engine.dialect
        error = dialect.loaded_dbapi.Error
        try:
            dbapi.execute(sql, args)
        except error as exc:
            gone = dialect.is_disconnect(exc, dbapi, None)
            raise DBAPIError.instance(sql, args, exc, error, connection_invalidated=gone) from exc

    def _write_alone(self) -> None:
        """The one row inserted, as its own transaction: in the driver's autocommit mode
        SQLite begins, writes and commits it in one step, holding its write lock only
        there (not while this thread waits for the interpreter between its statements),
        and the log is then synced (:meth:`~mtaplugin.db.WalConnection.sync_log`)."""
        ((sql, args),) = self._rows
        self._rows = []
        self._taken()
        dbapi = self._dbapi
        level, dbapi.isolation_level = dbapi.isolation_level, None
        try:
            self._execute(dbapi, sql, args)
        finally:
            dbapi.isolation_level = level
        sync = getattr(dbapi, "sync_log", None)
        if sync is not None:
            error = self._owner.engine.dialect.loaded_dbapi.Error
            try:
                sync()
            except (OSError, error) as exc:
                raise DBAPIError.instance("COMMIT", None, exc, error) from exc

    def end(self, commit: bool) -> None:
        """Commit (``commit``) or roll back, then give the connection back: one that failed,
        or a transaction rolled back, closes it (never kept: it may be what failed)."""
        try:
            if commit:
                self._write_pending()
            self._ended = True
            self._end(commit)
        finally:
            self._ended = True
            if self._turn:
                self._turn = False
                self._owner.turns.release()

    def _write_pending(self) -> None:
        """The rows :meth:`insert` has not written yet, before the commit."""
        if not self._rows:
            return
        try:
            if self._conn is None and len(self._rows) == 1:  # (nothing else ran)
                self._write_alone()
            else:
                self._write_rows()
        except BaseException:
            self._rows = []
            _drop(self._dbapi)
            self._dbapi = None
            raise

    def _end(self, commit: bool) -> None:
        self._rows = []
        dbapi = self._dbapi
        if dbapi is None:
            return  # never used
        if not commit:
            _drop(dbapi)
            return
        error = self._owner.engine.dialect.loaded_dbapi.Error
        try:
            if self._conn is not None:
                self._conn.commit()  # (SQLAlchemy's errors, from the driver's commit)
            if dbapi.in_transaction:
                try:
                    dbapi.commit()  # WalConnection: the log on disk when it returns
                except error as exc:
                    raise DBAPIError.instance("COMMIT", None, exc, error) from exc
        except BaseException:
            _drop(dbapi)
            raise
        assert self._fairy is not None
        self._owner._give(self._fairy)

    def _taken(self) -> PoolProxiedConnection:
        """The transaction's connection, taken from the kept ones at the first use."""
        if self._ended:
            raise RuntimeError("the decision's transaction has ended")
        fairy = self._fairy
        if fairy is None:
            owner = self._owner
            if not self._turn:
                if not owner.turns.acquire(timeout=owner.wait):
                    raise PoolTimeout(
                        f"{owner.WRITERS} decisions' transactions in use, "
                        f"none ended within {owner.wait:g} s"
                    )
                self._turn = True
            error = owner.engine.dialect.loaded_dbapi.Error
            try:
                fairy = owner._take()
            except error as exc:
                raise DBAPIError.instance(
                    "", None, exc, error, connection_invalidated=True
                ) from exc
            self._fairy, self._dbapi = fairy, fairy.dbapi_connection
        return fairy


class _KeptScope:
    """:meth:`KeptConnections.transaction`'s context on SQLite (a class, not a generator:
    it is entered at every end of message)."""

    __slots__ = ("tx",)

    def __init__(self, tx: KeptTransaction) -> None:
        self.tx = tx

    def __enter__(self) -> KeptTransaction:
        return self.tx

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        if exc is not None:  # rolled back; a failure to reach the database is a 4xx
            self.tx.end(commit=False)
            converted = as_trylater(exc)
            if converted is not None:
                raise converted from exc
            return
        try:
            self.tx.end(commit=True)
        except Exception as failed:
            converted = as_trylater(failed)
            if converted is None:
                raise
            raise converted from failed


def _drop(dbapi: Any) -> None:
    """Close a kept connection (its transaction, if any, rolled back by SQLite)."""
    if dbapi is not None:
        with contextlib.suppress(Exception):
            dbapi.close()
