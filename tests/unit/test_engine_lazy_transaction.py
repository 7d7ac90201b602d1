"""The decision's transaction is begun only when the decision needs the database
(``db.lazy_connection_scope``; on SQLite ``KeptConnections.transaction``): the milter's
usual post -- its list's snapshot cached, its RCPT lookup kept, nothing to store -- takes
no connection at end of message; a post that stores something (its journal row) still
commits it before the answer (on SQLite on a kept connection, not one of the pool), and a
failure rolls everything back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, event, select, text

from mtaplugin.db import lazy_connection_scope, make_engine
from mtaplugin.engine import Found, ListEngine
from mtaplugin.enums import ArchivePolicy
from mtaplugin.manage import lists, members
from mtaplugin.model import AcceptedPost
from mtaplugin.posting.verdict import Accept
from tests.helpers import envelope, make_post
from tests.unit.sites import Site


class Checkouts:
    """Connections taken from ``engine``'s pool."""

    def __init__(self, engine: Engine) -> None:
        self.count = 0
        self.engine = engine

    def __call__(self, *args: object) -> None:
        self.count += 1


@pytest.fixture
def checkouts(engine: ListEngine) -> Iterator[Checkouts]:
    counted = Checkouts(engine.db)
    event.listen(engine.db, "checkout", counted)
    yield counted
    event.remove(engine.db, "checkout", counted)


def pool_checkouts(engine: ListEngine) -> int:
    """The connections an RCPT lookup, or a decision's transaction, takes from the pool:
    SQLite's are kept between uses (``KeptConnections``), PostgreSQL's come from the pool."""
    return 0 if engine.connections.kept else 1


def milter_decision(engine: ListEngine, address: str, sender: str) -> Accept:
    """RCPT, then end of message with what RCPT found, as the milter session does."""
    found: Found = {}
    assert engine.check_recipient(f"<{address}>", found).reply is None
    verdict = engine.decide(
        envelope(address, mail_from=sender), make_post(sender, address), found=found
    )
    assert isinstance(verdict, Accept) and verdict.edits.add_recipients, verdict
    return verdict


def test_a_post_that_stores_nothing_takes_no_connection_at_end_of_message(
    engine: ListEngine, site: Site, checkouts: Checkouts
):
    with site.sessions.begin() as s:
        quiet = lists.create(s, site.addr("quiet"))
        quiet.archive_policy = ArchivePolicy.never
        members.add(s, quiet, "anne@example.com")
    milter_decision(engine, site.addr("quiet"), "anne@example.com")  # (the snapshot cached)
    before = checkouts.count
    milter_decision(engine, site.addr("quiet"), "anne@example.com")
    # the RCPT lookup's (none on SQLite: KeptConnections), none at end of message
    assert checkouts.count - before == pool_checkouts(engine)


def test_a_post_that_stores_its_journal_row_commits_it(
    engine: ListEngine, site: Site, checkouts: Checkouts
):
    with site.sessions() as s:
        waiting = len(s.scalars(select(AcceptedPost.id)).all())
    milter_decision(engine, site.addr("team"), "anne@example.com")
    before = checkouts.count
    milter_decision(engine, site.addr("team"), "anne@example.com")
    # RCPT and the journal row's transaction (on PostgreSQL; SQLite's are kept)
    assert checkouts.count - before == 2 * pool_checkouts(engine)
    with site.sessions() as s:
        assert len(s.scalars(select(AcceptedPost.id)).all()) == waiting + 2


def test_the_lazy_scope_commits_rolls_back_and_ends(tmp_path):
    db = make_engine(f"sqlite:///{tmp_path}/lazy.db")
    counted = Checkouts(db)
    event.listen(db, "checkout", counted)
    with db.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    counted.count = 0
    with lazy_connection_scope(db) as opened:
        pass
    assert counted.count == 0  # never asked for: never taken
    with lazy_connection_scope(db) as opened:
        opened().execute(text("INSERT INTO t VALUES (1)"))
        assert opened() is opened()
    with pytest.raises(ZeroDivisionError), lazy_connection_scope(db) as opened:
        opened().execute(text("INSERT INTO t VALUES (2)"))
        raise ZeroDivisionError
    with db.connect() as conn:
        assert conn.execute(text("SELECT x FROM t")).scalars().all() == [1]
    with pytest.raises(RuntimeError):
        opened()
    db.dispose()
