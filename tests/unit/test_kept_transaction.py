"""The decision's transaction on SQLite runs on a connection the engine keeps
(``KeptConnections.transaction``), as the RCPT lookup's read does, instead of a pool
checkout, a SQLAlchemy ``Connection`` and a reset per post: the accepted post's journal
row is written on the driver's cursor, and what else the decision stores (an outbox copy,
a held post) goes through a ``Connection`` over the same kept connection, in the same
transaction.  Nothing else changes: the row is committed (seen by any other connection)
before the answer; a database error is a 451 and rolls the whole decision back; the
connection that failed is closed, never kept, and the next post is decided as usual."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from mtaplugin.copies import paths, transforms
from mtaplugin.db import make_engine
from mtaplugin.engine import Found, ListEngine
from mtaplugin.lists.kept import KeptConnections, KeptTransaction
from mtaplugin.posting.verdict import Accept, Discard, TempFail, Verdict
from tests.helpers import envelope, make_post, sqlite_write_lock_free
from tests.unit.sites import Site


def decided(engine: ListEngine, site: Site, in_place: bool = True) -> Verdict:
    """A post of anne's to ``team`` (a list that archives: a journal row), RCPT first, as
    the milter's session does; ``in_place=False``: its members' copy through the outbox."""
    address = site.address
    found: Found = {}
    assert engine.check_recipient(f"<{address}>", found).reply is None
    post = make_post("anne@example.com", address)
    return engine.decide(envelope(address, mail_from="anne@example.com"), post, in_place, found)


def count(site: Site, table: str) -> int:
    """The rows of ``table`` of the site's list, read by a connection of its own (the
    driver's, outside the engine and its pool): what is committed."""
    path = site.url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as other:
        (n,) = other.execute(
            f"SELECT count(*) FROM {table} t JOIN mailing_lists m ON m.id = t.mailing_list_id"
            " WHERE m.mail_host = ?",
            (site.host,),
        ).fetchone()
    other.close()
    return int(n)


def kept(engine: ListEngine) -> list[Any]:
    """The driver's connections the engine keeps free now."""
    return [fairy.dbapi_connection for fairy in engine.connections._free]


def closed(dbapi: Any) -> bool:
    try:
        dbapi.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


def test_the_journal_row_is_committed_on_a_kept_connection_before_the_answer(
    sqlite_engine: ListEngine, site: Site
):
    engine = sqlite_engine
    assert isinstance(decided(engine, site), Accept)  # (the snapshot cached)
    rows = count(site, "accepted_posts")
    taken: list[object] = []
    event.listen(engine.db, "checkout", lambda *args: taken.append(args))
    verdict = decided(engine, site)
    assert isinstance(verdict, Accept) and verdict.edits.add_recipients, verdict
    assert count(site, "accepted_posts") == rows + 1  # committed: seen by another connection
    assert taken == []  # no connection of the pool, at RCPT or at end of message
    (connection,) = kept(engine)  # one connection served both, given back
    assert not connection.in_transaction


def test_what_else_the_decision_stores_is_in_the_same_transaction(
    sqlite_engine: ListEngine, site: Site
):
    """Through the outbox (``in_place=False``): the journal row on the driver's cursor,
    then the members' copy through the ORM, on the one kept connection; when the copy
    cannot be stored, the journal row is rolled back with it."""
    engine = sqlite_engine
    rows, copies = count(site, "accepted_posts"), count(site, "outbox")
    assert isinstance(decided(engine, site, in_place=False), Discard)
    assert (count(site, "accepted_posts"), count(site, "outbox")) == (rows + 1, copies + 1)
    (connection,) = kept(engine)
    with site.sessions.begin() as s:
        s.execute(
            text(
                "CREATE TRIGGER no_copies BEFORE INSERT ON outbox"
                " BEGIN SELECT RAISE(ABORT, 'the disk is full'); END"
            )
        )
    try:
        verdict = decided(engine, site, in_place=False)
        assert isinstance(verdict, TempFail) and verdict.reply.code == 451, verdict
    finally:
        with site.sessions.begin() as s:
            s.execute(text("DROP TRIGGER no_copies"))
    # nothing stored (the journal row written before the copy rolled back), and the
    # connection that failed is closed, not kept
    assert (count(site, "accepted_posts"), count(site, "outbox")) == (rows + 1, copies + 1)
    assert closed(connection) and kept(engine) == []
    assert isinstance(decided(engine, site, in_place=False), Discard)  # a new one
    assert (count(site, "accepted_posts"), count(site, "outbox")) == (rows + 2, copies + 2)


def test_a_journal_row_the_database_refuses_is_a_451_and_its_connection_is_not_kept(
    sqlite_engine: ListEngine, site: Site
):
    engine = sqlite_engine
    assert isinstance(decided(engine, site), Accept)
    rows = count(site, "accepted_posts")
    (connection,) = kept(engine)
    with site.sessions.begin() as s:
        s.execute(text("ALTER TABLE accepted_posts RENAME TO accepted_away"))
    try:
        verdict = decided(engine, site)
        assert isinstance(verdict, TempFail) and verdict.reply.code == 451, verdict
        assert "accepted_posts" in verdict.reply.text  # the driver's error, named
    finally:
        with site.sessions.begin() as s:
            s.execute(text("ALTER TABLE accepted_away RENAME TO accepted_posts"))
    assert closed(connection) and connection not in kept(engine)
    assert isinstance(decided(engine, site), Accept)  # the next post, as usual
    assert count(site, "accepted_posts") == rows + 1


def test_a_decision_on_another_thread_than_the_lookup(sqlite_engine: ListEngine, site: Site):
    """libmilter calls a session's callbacks on whichever of its threads is free: the
    connection the RCPT lookup kept serves the end of message on another thread."""
    engine = sqlite_engine
    address = site.address
    found: Found = {}
    assert engine.check_recipient(f"<{address}>", found).reply is None
    made_by_lookup = kept(engine)
    rows = count(site, "accepted_posts")
    verdicts: list[Verdict] = []
    post = make_post("anne@example.com", address)
    eom = threading.Thread(
        target=lambda: verdicts.append(
            engine.decide(envelope(address, mail_from="anne@example.com"), post, found=found)
        )
    )
    eom.start()
    eom.join(timeout=120)
    assert isinstance(verdicts[0], Accept), verdicts
    assert count(site, "accepted_posts") == rows + 1
    assert kept(engine) == made_by_lookup


def test_closing_the_engine_closes_its_kept_connections(sqlite_engine: ListEngine, site: Site):
    engine = sqlite_engine
    assert isinstance(decided(engine, site), Accept)
    connections = kept(engine)
    assert connections
    engine.close()
    assert all(closed(c) for c in connections) and kept(engine) == []


def test_the_kept_transaction_is_taken_when_first_used_and_ends(tmp_path: Path) -> None:
    db = make_engine(f"sqlite:///{tmp_path}/kept.db", sqlite_wal=True)
    with db.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    connections = KeptConnections(db)
    with connections.transaction() as unused:
        pass
    assert isinstance(unused, KeptTransaction) and connections._free == []  # none made
    with connections.transaction() as tx:
        tx().execute(text("INSERT INTO t VALUES (1)"))
        assert tx() is tx()
    (fairy,) = connections._free
    with pytest.raises(ZeroDivisionError), connections.transaction() as tx:
        tx().execute(text("INSERT INTO t VALUES (2)"))
        raise ZeroDivisionError
    assert connections._free == [] and closed(fairy.dbapi_connection)  # rolled back, closed
    with pytest.raises(RuntimeError):
        tx()
    with db.connect() as conn:
        assert conn.execute(text("SELECT x FROM t")).scalars().all() == [1]
    connections.close()
    db.dispose()


def test_no_more_transactions_at_once_than_the_pool_allowed(tmp_path: Path) -> None:
    """The pool made the 16th decision wait for a connection; the kept connections keep
    that bound on transactions in use (``WRITERS``): one more waits its turn, and when no
    turn comes within the wait it is the 4xx a pool timeout was, and nothing is written."""
    from mtaplugin.errors import DatabaseUnavailable

    db = make_engine(f"sqlite:///{tmp_path}/kept.db", sqlite_wal=True)
    with db.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    connections = KeptConnections(db)
    connections.wait = 0.2
    scopes = [connections.transaction() for _ in range(KeptConnections.WRITERS)]
    for n, scope in enumerate(scopes):
        scope.__enter__()().execute(text(f"SELECT {n}"))  # each holds its connection
    with pytest.raises(DatabaseUnavailable), connections.transaction() as tx:
        tx().execute(text("INSERT INTO t VALUES (1)"))
    scopes[0].__exit__(None, None, None)  # one ends: its turn is free again
    with connections.transaction() as tx:
        tx().execute(text("INSERT INTO t VALUES (2)"))
    for scope in scopes[1:]:
        scope.__exit__(None, None, None)
    with db.connect() as conn:
        assert conn.execute(text("SELECT x FROM t")).scalars().all() == [2]
    waiting: list[str] = []

    def later() -> None:  # a 16th transaction waits for a turn, then goes on
        with connections.transaction() as tx:
            tx().execute(text("INSERT INTO t VALUES (3)"))
        waiting.append("done")

    connections.wait = 30.0
    scopes = [connections.transaction() for _ in range(KeptConnections.WRITERS)]
    for scope in scopes:
        scope.__enter__()().execute(text("SELECT 1"))
    thread = threading.Thread(target=later)
    thread.start()
    thread.join(0.3)
    assert waiting == []  # no turn yet
    scopes[0].__exit__(None, None, None)
    thread.join(30)
    assert waiting == ["done"]
    for scope in scopes[1:]:
        scope.__exit__(None, None, None)
    connections.close()
    db.dispose()


@pytest.mark.parametrize("in_place", [True, False], ids=["in place", "outbox"])
def test_the_write_lock_is_free_while_the_copy_is_made(
    sqlite_engine: ListEngine, site: Site, monkeypatch: pytest.MonkeyPatch, in_place: bool
):
    """The journal row is the decision's last write: SQLite's one write lock, which every
    other decision and the worker's drain wait for, is not held while the members' copy
    is decorated and signed (a millisecond or more), only from the row to the commit."""
    engine = sqlite_engine
    path = site.url.removeprefix("sqlite:///")
    probes: list[bool] = []

    def probed(real: Any) -> Any:
        def making(*args: Any, **kwargs: Any) -> Any:
            probes.append(sqlite_write_lock_free(path))
            result = real(*args, **kwargs)
            probes.append(sqlite_write_lock_free(path))
            return result

        return making

    if in_place:
        monkeypatch.setattr(paths, "in_place_copy", probed(paths.in_place_copy))
    else:
        monkeypatch.setattr(transforms, "members_copy", probed(transforms.members_copy))
    rows = count(site, "accepted_posts")
    verdict = decided(engine, site, in_place=in_place)
    # (through the outbox the original is discarded: the worker sends the copy)
    assert isinstance(verdict, Accept if in_place else Discard), verdict
    assert probes == [True, True]  # the copy made (and signed, where the list signs) unlocked
    assert count(site, "accepted_posts") == rows + 1  # and the row committed all the same
    assert sqlite_write_lock_free(path)  # (and given back)


def test_a_lone_row_is_its_own_transaction_and_a_row_before_others_is_in_theirs(
    tmp_path: Path,
) -> None:
    """A row inserted while the transaction ran nothing else is written at its end: alone,
    as its own transaction (SQLite holds its write lock only while it runs the statement);
    before any other statement, first in the transaction, undone with it."""
    from sqlalchemy import Column, Integer, MetaData, Table, insert

    path = tmp_path / "kept.db"
    db = make_engine(f"sqlite:///{path}", sqlite_wal=True)
    table = Table("t", MetaData(), Column("x", Integer))
    with db.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    connections = KeptConnections(db)

    def rows() -> list[int]:
        with db.connect() as conn:
            return list(conn.execute(text("SELECT x FROM t ORDER BY rowid")).scalars())

    with connections.transaction() as tx:
        tx.insert(insert(table), {"x": 1})
        assert sqlite_write_lock_free(str(path))  # nothing written yet
    assert rows() == [1] and sqlite_write_lock_free(str(path))
    (fairy,) = connections._free
    assert not fairy.dbapi_connection.in_transaction
    assert fairy.dbapi_connection.isolation_level == ""  # the driver's mode given back

    with pytest.raises(ZeroDivisionError), connections.transaction() as tx:
        tx.insert(insert(table), {"x": 2})
        tx().execute(text("INSERT INTO t VALUES (3)"))  # the row goes first, in this one
        assert not sqlite_write_lock_free(str(path))
        raise ZeroDivisionError
    assert rows() == [1]  # both undone

    with connections.transaction() as tx:
        tx.insert(insert(table), {"x": 4})
        tx().execute(text("INSERT INTO t VALUES (5)"))
        tx.insert(insert(table), {"x": 6})  # (the transaction is under way: written now)
    assert rows() == [1, 4, 5, 6]
    connections.close()
    db.dispose()
