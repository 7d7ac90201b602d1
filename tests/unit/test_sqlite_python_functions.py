"""mtaplugin's SQLite connections define no SQL function written in Python
(``mtaplugin.db.WalConnection.create_function``).

SQLite calls such a function, and its destructor when the connection closes, through
``PyGILState_Ensure``: in the milter that runs on a thread of libmilter's worker pool, where
pymilter's per-session thread states leave CPython's note of the thread's own state pointing
at freed memory.  Under load the pool closed the connections it had no room for, and the
milter died of SIGSEGV in ``destructor_callback`` -> ``PyGILState_Ensure`` -> ``take_gil``
(its core, bench/load.py ``--cores``), each time answering 451 4.7.1 until ``serve``
restarted it (46 % and 87 % of a load round).  SQLAlchemy's pysqlite dialect defines
``regexp()`` and ``floor()`` on every connection it opens."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from mtaplugin.db import make_engine


def _defined_by_the_application(conn: sqlite3.Connection) -> set[str]:
    """The SQL functions SQLite does not define itself (its extensions' and the Python
    program's)."""
    rows = conn.execute("SELECT name FROM pragma_function_list WHERE builtin = 0")
    return {name for (name,) in rows}


@pytest.mark.parametrize("wal", [True, False])
def test_a_connection_of_mtaplugin_defines_no_sql_function_in_python(
    tmp_path: Path, wal: bool
) -> None:
    bare = sqlite3.connect(":memory:")
    try:
        sqlite_own = _defined_by_the_application(bare)
    finally:
        bare.close()
    engine = make_engine(f"sqlite:///{tmp_path}/lists.db", sqlite_wal=wal)
    try:
        with engine.connect() as conn:
            dbapi = conn.connection.dbapi_connection
            assert isinstance(dbapi, sqlite3.Connection)
            assert _defined_by_the_application(dbapi) == sqlite_own
            with pytest.raises(OperationalError, match="no such function: regexp"):
                conn.execute(text("SELECT regexp('a', 'a')"))
    finally:
        engine.dispose()
