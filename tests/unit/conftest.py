"""Fixtures of the unit tests (the database fixtures themselves live in tests/conftest.py).

``db_url`` makes a new database for every test, which costs about half a second on
PostgreSQL.  Modules with many small tests use one database per module and backend instead:
``txn_session`` rolls each test back, and ``module_sessions`` (for code that commits) is
used with names made unique per test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import make_engine, sessionmaker_for
from tests.conftest import BACKENDS, fresh_database


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
