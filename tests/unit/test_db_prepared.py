"""``database.prepared_statements``: off, psycopg prepares nothing on the PostgreSQL
server, so that a pooler in transaction mode (PgBouncer before 1.21) may hand each
transaction another server connection."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from mtaplugin import config
from mtaplugin.db import connect
from tests.conftest import fresh_database


def prepared_after_repeats(url: str, prepared_statements: bool) -> int:
    settings = config.load(
        environ={
            "MTAPLUGIN_DATABASE_URL": url,
            "MTAPLUGIN_DATABASE_PREPARED_STATEMENTS": str(prepared_statements).lower(),
        }
    )
    assert settings.database.prepared_statements is prepared_statements
    engine = connect(settings)
    try:
        with engine.connect() as conn:
            for _ in range(10):  # psycopg prepares a statement run 5 times
                conn.execute(text("SELECT count(*) FROM domains WHERE mail_host = :h"), {"h": "x"})
            return int(conn.scalar(text("SELECT count(*) FROM pg_prepared_statements")) or 0)
    finally:
        engine.dispose()


def test_statements_are_prepared_on_the_server_unless_turned_off(
    request: pytest.FixtureRequest, lab_root: Path
) -> None:
    url = fresh_database(request, "postgresql", lab_root)
    assert prepared_after_repeats(url, True) >= 1
    assert prepared_after_repeats(url, False) == 0
