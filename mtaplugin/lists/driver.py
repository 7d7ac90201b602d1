"""The hot path's statements run on the driver's own cursor, without SQLAlchemy's
execution context (which costs several times what SQLite takes to answer): reads
(:func:`driver_rows`) and plain inserts (:func:`driver_insert`) inside a ``Connection``'s
transaction, and the statements' SQL and arguments for the kept connections of
:mod:`mtaplugin.lists.kept` (:func:`compiled`, :func:`insert_args`).  A driver error is
raised as SQLAlchemy raises it, so that a database that cannot answer is still a
:class:`~mtaplugin.errors.TryLater`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, Dialect, Insert, Select
from sqlalchemy.exc import DBAPIError

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
    sql, order = compiled(statement, conn.dialect)
    return _on_cursor(conn, sql, bound(order, params), fetch=True)


def bound(order: tuple[str, ...] | None, params: Mapping[str, Any]) -> Any:
    """The arguments the driver takes for ``params``: by position in ``order``, or by
    name (None)."""
    return tuple(params[k] for k in order) if order is not None else params


def compiled(
    statement: Select[*tuple[Any, ...]], dialect: Dialect
) -> tuple[str, tuple[str, ...] | None]:
    """A hot path's statement's SQL for ``dialect``, and the order of its parameters when
    the driver takes them by position (compiled once per dialect)."""
    key = (id(statement), dialect.name)
    found = _COMPILED.get(key)
    if found is None:
        c = statement.compile(dialect=dialect)
        positions = c.positiontup
        found = (str(c), tuple(positions) if positions is not None else None)
        _COMPILED[key] = found
    return found


#: (insert, dialect name, columns) → (its SQL for that dialect, the order of its
#: parameters when the driver takes them by position, each column's bind processing)
_WRITES: dict[tuple[int, str, tuple[str, ...]], tuple[str, tuple[str, ...] | None, Any]] = {}


def insert_args(statement: Insert, dialect: Dialect, params: dict[str, Any]) -> tuple[str, Any]:
    """The SQL of one of the hot path's inserts for ``dialect`` (every column given: no
    default is computed) and the driver's arguments for one row of ``params``: compiled
    once per dialect and columns, each value processed by its column's type as
    SQLAlchemy's execution does (JSON, dates, booleans), without its execution context."""
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
    return sql, bound(order, values)


def driver_insert(conn: Connection, statement: Insert, params: dict[str, Any]) -> None:
    """One row written by one of the hot path's inserts (:func:`insert_args`), on the
    driver's cursor inside ``conn``'s transaction."""
    sql, args = insert_args(statement, conn.dialect, params)
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
