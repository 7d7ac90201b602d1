"""The hot path's statements run on the driver's own cursor, without SQLAlchemy's
execution context (which costs several times what SQLite takes to answer): reads
(:func:`driver_rows`), plain inserts (:func:`driver_insert`) and the RCPT lookup's kept
connections (:class:`Readers`).  A driver error is raised as SQLAlchemy raises it, so
that a database that cannot answer is still a :class:`~mtaplugin.errors.TryLater`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Dialect, Engine, Insert, Select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import PoolProxiedConnection

#: (statement, dialect name) → (its SQL for that dialect, the order of its parameters
#: when the driver takes them by position)
_COMPILED: dict[tuple[int, str], tuple[str, tuple[str, ...] | None]] = {}


def driver_rows(
    conn: Connection, statement: Select[*tuple[Any, ...]], params: dict[str, Any]
) -> list[Any]:
    """The rows of one of the hot path's statements (plain values, no type processing),
    run on the driver's own cursor inside ``conn``'s transaction: compiled once per
    dialect, without SQLAlchemy's execution context, which costs several times what
    SQLite takes to answer.  A driver error is raised as SQLAlchemy raises it (so a
    database that cannot answer is still a :class:`~mtaplugin.errors.TryLater`)."""
    sql, order = _compiled(statement, conn.dialect)
    args: Any = tuple(params[k] for k in order) if order is not None else params
    return _on_cursor(conn, sql, args, fetch=True)


class Readers:
    """The RCPT lookup's one statement (:func:`mtaplugin.lists.roster.lookup_lists`).
    On SQLite, on connections kept here between lookups instead of checked out of the
    engine's pool and reset on return for each: a read in the driver's autocommit mode
    holds nothing once its rows are fetched (a connection found in a transaction is
    rolled back).  Each is made by the pool (with its pragmas) and detached from it; one
    that fails, or cannot be opened, is closed and the error raised as SQLAlchemy raises
    it, so that a database that cannot answer is still a 4xx.  On any other database, on
    a connection of the pool (no transaction begun: a read the driver began ends with
    the connection's return to the pool)."""

    #: the most connections kept free between lookups (the pool's own size); a connection
    #: given back beyond them is closed
    KEEP = 5

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.kept = engine.dialect.name == "sqlite"
        #: the connections not in use (``list.pop``/``append`` are atomic: no lock)
        self._free: list[PoolProxiedConnection] = []

    def rows(self, statement: Select[*tuple[Any, ...]], params: dict[str, Any]) -> list[Any]:
        if not self.kept:
            with self.engine.connect() as conn:
                return driver_rows(conn, statement, params)
        dialect = self.engine.dialect
        sql, order = _compiled(statement, dialect)
        args: Any = tuple(params[k] for k in order) if order is not None else params
        fairy: PoolProxiedConnection | None = None
        try:
            try:
                fairy = self._free.pop()
            except IndexError:
                # a connection that cannot be opened (no file, no descriptor left, the
                # pragmas' lock) is a database that cannot answer, as any other error here
                fairy = self.engine.raw_connection()
                fairy.detach()
            dbapi: Any = fairy.dbapi_connection
            cursor = dbapi.cursor()
            cursor.execute(sql, args)
            found = list(cursor.fetchall())
            cursor.close()
            if dbapi.in_transaction:
                dbapi.rollback()
        except dialect.loaded_dbapi.Error as exc:
            if fairy is not None:
                fairy.close()
            raise DBAPIError.instance(
                sql, args, exc, dialect.loaded_dbapi.Error, connection_invalidated=True
            ) from exc
        except BaseException:
            if fairy is not None:
                fairy.close()
            raise
        if len(self._free) < self.KEEP:
            self._free.append(fairy)
        else:
            fairy.close()
        return found

    def close(self) -> None:
        """Close the kept connections (a lookup after it makes one again)."""
        while True:
            try:
                fairy = self._free.pop()
            except IndexError:
                return
            fairy.close()


def _compiled(
    statement: Select[*tuple[Any, ...]], dialect: Dialect
) -> tuple[str, tuple[str, ...] | None]:
    """A hot path's statement's SQL for ``dialect``, and the order of its parameters when
    the driver takes them by position (compiled once per dialect)."""
    key = (id(statement), dialect.name)
    compiled = _COMPILED.get(key)
    if compiled is None:
        c = statement.compile(dialect=dialect)
        positions = c.positiontup
        compiled = (str(c), tuple(positions) if positions is not None else None)
        _COMPILED[key] = compiled
    return compiled


#: (insert, dialect name, columns) → (its SQL for that dialect, the order of its
#: parameters when the driver takes them by position, each column's bind processing)
_WRITES: dict[tuple[int, str, tuple[str, ...]], tuple[str, tuple[str, ...] | None, Any]] = {}


def driver_insert(conn: Connection, statement: Insert, params: dict[str, Any]) -> None:
    """One row written by one of the hot path's inserts (every column given: no default
    is computed), on the driver's cursor inside ``conn``'s transaction: compiled once per
    dialect and columns, each value processed by its column's type as SQLAlchemy's
    execution does (JSON, dates, booleans), without its execution context."""
    dialect = conn.dialect
    columns = tuple(params)
    key = (id(statement), dialect.name, columns)
    written = _WRITES.get(key)
    if written is None:
        c = statement.compile(dialect=dialect, column_keys=list(columns))
        if c.insert_prefetch or c.postfetch or c.effective_returning:
            raise ValueError(f"not a plain insert for the driver: {c}")
        positions = c.positiontup
        order = tuple(positions) if positions is not None else None
        written = _WRITES[key] = (str(c), order, dict(c._bind_processors))
    sql, order, processors = written
    values = {
        name: (processors[name](value) if name in processors else value)
        for name, value in params.items()
    }
    args: Any = tuple(values[k] for k in order) if order is not None else values
    _on_cursor(conn, sql, args, fetch=False)


def _on_cursor(conn: Connection, sql: str, args: Any, fetch: bool) -> list[Any]:
    """Run ``sql`` on the driver's cursor of ``conn``; a driver error raised as
    SQLAlchemy raises it."""
    dialect = conn.dialect
    fairy = conn.connection
    cursor = fairy.cursor()
    try:
        cursor.execute(sql, args)
        return list(cursor.fetchall()) if fetch else []
    except dialect.loaded_dbapi.Error as exc:
        gone = dialect.is_disconnect(exc, fairy.dbapi_connection, cursor)
        if gone:
            conn.invalidate(exc)
        raise DBAPIError.instance(
            sql, args, exc, dialect.loaded_dbapi.Error, connection_invalidated=gone
        ) from exc
    finally:
        cursor.close()
