"""The RCPT lookup on SQLite keeps its connections between lookups (``KeptConnections``)
instead of taking one from the pool and resetting it for each: what it reads is still
read at every lookup (a list made, or changed, between two lookups is seen by the second,
with its new generation), and a database that cannot answer is still a 4xx, after which
the broken connection is not kept."""

from __future__ import annotations

import sqlite3

from sqlalchemy import event, text

from mtaplugin.engine import Found, ListEngine
from mtaplugin.manage import lists
from tests.unit.sites import Site


def checkouts_of(engine: ListEngine) -> list[object]:
    """The pool's checkouts from now on (the test's own sessions' among them)."""
    taken: list[object] = []
    event.listen(engine.db, "checkout", lambda *args: taken.append(args))
    return taken


def rcpt(engine: ListEngine, address: str, found: Found | None = None) -> int | None:
    """The RCPT answer's code (None: accepted); no connection of the pool taken for it
    (the list domains' answers are read first: that query is the pool's)."""
    engine.list_domains.__contains__(address.strip("<>").partition("@")[2])
    taken = checkouts_of(engine)
    reply = engine.check_recipient(address, found).reply
    assert taken == []
    return None if reply is None else reply.code


def test_lookups_read_afresh_on_a_kept_connection(sqlite_engine: ListEngine, site: Site):
    engine = sqlite_engine
    # the first lookup makes its connection (through the pool), kept after
    assert engine.check_recipient(f"<{site.addr('team')}>").reply is None
    later = f"<{site.addr('made-later')}>"
    assert rcpt(engine, later) == 550  # no such list (yet)
    with site.sessions.begin() as s:
        lists.create(s, later.strip("<>"))
    found: Found = {}
    assert rcpt(engine, later, found) is None  # seen at once
    generation = found[later].generation
    with site.sessions.begin() as s:
        s.execute(
            text("UPDATE mailing_lists SET generation = generation + 1 WHERE list_name = :n"),
            {"n": "made-later"},
        )
    found = {}
    assert rcpt(engine, later, found) is None
    assert found[later].generation == generation + 1  # the settings' new version


def test_a_database_that_cannot_answer_is_a_4xx_and_its_connection_is_not_kept(
    sqlite_engine: ListEngine, site: Site
):
    engine = sqlite_engine
    address = f"<{site.addr('team')}>"
    assert engine.check_recipient(address).reply is None  # (a connection kept)
    with site.sessions.begin() as s:
        s.execute(text("ALTER TABLE domains RENAME TO domains_away"))
    try:
        reply = engine.check_recipient(address).reply
        assert reply is not None and reply.code == 451, reply
        assert engine.connections._free == []  # the connection that failed was closed
    finally:
        with site.sessions.begin() as s:
            s.execute(text("ALTER TABLE domains_away RENAME TO domains"))
    assert engine.check_recipient(address).reply is None  # a new connection, kept again
    assert len(engine.connections._free) == 1


def test_a_connection_that_cannot_be_opened_is_a_4xx(sqlite_engine: ListEngine, site: Site):
    engine = sqlite_engine
    address = f"<{site.addr('team')}>"
    assert engine.check_recipient(address).reply is None  # (the list domains read)
    engine.connections.close()  # the next lookup opens a connection

    def refuse(dbapi_connection: object, record: object) -> None:
        raise sqlite3.OperationalError("unable to open database file")

    event.listen(engine.db, "connect", refuse)
    try:
        reply = engine.check_recipient(address).reply
        assert reply is not None and reply.code == 451, reply
        assert engine.connections._free == []
    finally:
        event.remove(engine.db, "connect", refuse)
    assert engine.check_recipient(address).reply is None  # opened, and kept again
    assert len(engine.connections._free) == 1
