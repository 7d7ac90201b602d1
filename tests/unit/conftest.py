"""Fixtures of the unit tests (the database fixtures themselves live in tests/conftest.py).

``db_url`` makes a new database for every test, which costs about half a second on
PostgreSQL.  Modules with many small tests use one database per module and backend instead:
``txn_session`` rolls each test back, and ``module_sessions`` (for code that commits) is
used with names made unique per test.

``site`` is a list domain of its own per test on the module's database (tests/unit/sites.py),
``engine`` the engine deciding its posts; ``web_site`` the same with the web app over it
(tests/unit/webclient.py), ``cheap_argon2`` the cheapest password hashing; ``mlist`` a
list with its owner inside ``txn_session``.  (The command line's fixtures are in
tests/unit/cli/conftest.py.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import passwords
from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.engine import ListEngine
from mtaplugin.enums import MemberRole
from mtaplugin.model import MailingList
from tests.conftest import BACKENDS, fresh_database
from tests.helpers import unique
from tests.unit import webclient
from tests.unit.sites import Roster, Site, add_domain, make_site


@pytest.fixture
def sqlite_url(request: pytest.FixtureRequest, lab_root: Path) -> str:
    """A fresh, migrated SQLite database only (for SQLite-specific tests)."""
    return fresh_database(request, "sqlite", lab_root)


@pytest.fixture(scope="module", params=BACKENDS)
def module_db_url(request: pytest.FixtureRequest, lab_root: Path) -> str:
    """A fresh, migrated database shared by the tests of one module, on each backend."""
    return fresh_database(request, request.param, lab_root)


@pytest.fixture(scope="module")
def module_engine(module_db_url: str) -> Iterator[Engine]:
    engine = make_engine(module_db_url, timeout=2.0)
    yield engine
    engine.dispose()


@pytest.fixture
def module_sessions(module_engine: Engine) -> sessionmaker[Session]:
    return sessionmaker_for(module_engine)


@pytest.fixture
def txn_session(module_engine: Engine) -> Iterator[Session]:
    """A session inside a transaction that is rolled back after the test."""
    with module_engine.connect() as conn:
        outer = conn.begin()
        session = Session(bind=conn, expire_on_commit=False)
        try:
            yield session
        finally:
            session.close()
            outer.rollback()


@pytest.fixture
def site_roster() -> Roster:
    """Who is on the site's lists (a module overrides this fixture to change it)."""
    return Roster()


@pytest.fixture
def site(module_sessions: sessionmaker[Session], module_db_url: str, site_roster: Roster) -> Site:
    return make_site(module_sessions, site_roster, url=module_db_url)


@pytest.fixture
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2 with the smallest cost: the tests check the flow, not the hash's strength."""
    monkeypatch.setattr(passwords, "PASSWORDS", webclient.CHEAP_PASSWORDS)


@pytest.fixture
def web_site(
    module_sessions: sessionmaker[Session], tmp_path: Path, cheap_argon2: None
) -> webclient.Site:
    """A list domain of its own with the web app over it (tests/unit/webclient.py)."""
    return webclient.make_site(module_sessions, tmp_path / "var")


@pytest.fixture
def mlist(txn_session: Session) -> MailingList:
    """A list ``team`` with its owner, in a domain of its own, in the test's transaction
    (rolled back after the test)."""
    owner = Roster((("owner@example.com", MemberRole.owner),))
    return add_domain(txn_session, f"{unique('team')}.test", owner)


@pytest.fixture
def engine(site: Site) -> ListEngine:
    return ListEngine(site.sessions, site_owner="postmaster@site.test")


@pytest.fixture
def sqlite_engine(engine: ListEngine) -> Iterator[ListEngine]:
    """The ``engine`` on SQLite, whose RCPT lookups and decisions run on connections it
    keeps (``KeptConnections``), closed after the test; PostgreSQL's come from the pool."""
    if not engine.connections.kept:
        pytest.skip("SQLite only: on PostgreSQL the pool serves (no kept connections)")
    yield engine
    engine.connections.close()


@pytest.fixture(autouse=True)
def _fresh_password_budgets() -> Iterator[None]:
    """Each test starts with no moderator-password check remembered (the memo and the
    per-post budgets are per process: a post's bytes repeat from test to test)."""
    from mtaplugin.posting import moderator_password

    moderator_password.MEMO.clear()
    moderator_password.BUDGETS.clear()
    yield


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The candidates ``PASSWORDS.verify`` was asked about.  The real verification runs
    for the right password only (a wrong one costs nothing here, so that the old code's
    10 000 checks fail the test at once instead of taking half an hour)."""
    asked: list[str] = []
    real: Callable[..., Any] = passwords.PASSWORDS.verify

    def counting(secret: str, hashed: str, **kw: Any) -> bool:
        asked.append(secret)
        return bool(real(secret, hashed, **kw)) if secret == "s3cret" else False

    monkeypatch.setattr(passwords.PASSWORDS, "verify", counting)
    return asked
