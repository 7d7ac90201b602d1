"""The Alembic migrations build exactly the schema of mtaplugin.model, on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, delete, insert, inspect, select, text

from mtaplugin.archive.search import outside_model
from mtaplugin.db import alembic_config, current_revision, make_engine, sessionmaker_for, upgrade
from mtaplugin.enums import RequestType
from mtaplugin.model import Base, HeldMessage, PendingRequest
from tests.conftest import BACKENDS
from tests.helpers import unique


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, lab_root: Path) -> str:
    """A database with no schema at all."""
    name = unique("migrations")
    if request.param == "sqlite":
        return f"sqlite:///{lab_root / 'migrations' / f'{name}.db'}"
    server = request.getfixturevalue("postgres")
    server.execute(f"CREATE DATABASE {name}")
    return server.url(name)


@pytest.fixture
def engine(empty_url: str) -> Iterator[Engine]:
    upgrade(empty_url)
    db = make_engine(empty_url)
    yield db
    db.dispose()


def differences(db: Engine) -> list[object]:
    with db.connect() as conn:
        # The archive's search index (migration 0022) is not in the model: its tables are
        # checked by test_the_search_index_comes_and_goes_with_its_revision instead.
        ctx = MigrationContext.configure(
            conn,
            opts={
                "compare_type": True,
                "include_name": lambda name, type_, _parents: (
                    not (type_ == "table" and outside_model(name))
                ),
            },
        )
        return list(compare_metadata(ctx, Base.metadata))


def triggers(db: Engine) -> set[str]:
    with db.connect() as conn:
        if db.dialect.name == "sqlite":
            rows = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'"))
        else:
            rows = conn.execute(text("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"))
        return {r[0] for r in rows}


def heads(url: str) -> list[str]:
    return list(ScriptDirectory.from_config(alembic_config(url)).get_heads())


def test_one_head(empty_url: str):
    assert len(heads(empty_url)) == 1


def test_upgraded_schema_matches_the_model(engine: Engine, empty_url: str):
    assert differences(engine) == []
    assert current_revision(engine) == heads(empty_url)[0]
    tables = set(inspect(engine).get_table_names())
    assert set(Base.metadata.tables) <= tables
    assert {t for t in tables - set(Base.metadata.tables) if not outside_model(t)} == {
        "alembic_version"
    }
    assert "archive_fts" in tables


def test_downgrade_to_base_and_upgrade_again(engine: Engine, empty_url: str):
    cfg = alembic_config(empty_url)
    command.downgrade(cfg, "base")
    engine.dispose()
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    assert current_revision(engine) is None
    assert triggers(engine) == set()
    command.upgrade(cfg, "head")
    engine.dispose()
    assert differences(engine) == []
    assert current_revision(engine) == heads(empty_url)[0]


def test_every_revision_downgrades_one_step(engine: Engine, empty_url: str):
    """Walk down one revision at a time, checking each step, then back up."""
    cfg = alembic_config(empty_url)
    script = ScriptDirectory.from_config(cfg)
    revisions = [r.revision for r in script.walk_revisions()]  # newest first
    for rev, below in zip(revisions, [*revisions[1:], None], strict=True):
        assert current_revision(engine) == rev
        command.downgrade(cfg, "-1")
        engine.dispose()
        assert current_revision(engine) == below
    command.upgrade(cfg, "head")
    engine.dispose()
    assert differences(engine) == []


def test_upgrade_is_idempotent(engine: Engine, empty_url: str):
    before = triggers(engine)
    upgrade(empty_url)
    assert differences(engine) == []
    assert triggers(engine) == before


def test_the_comparison_sees_a_missing_index(engine: Engine):
    """The check above is not vacuous: a schema that drifted from the model is reported."""
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX ix_outbox_due"))
    found = differences(engine)
    assert found
    assert "ix_outbox_due" in repr(found)


def test_triggers_come_and_go_with_their_revision(engine: Engine, empty_url: str):
    assert "trg_gen_members_ins" in triggers(engine)
    command.downgrade(alembic_config(empty_url), "0001")
    engine.dispose()
    assert triggers(engine) == set()
    assert "generation" not in {c["name"] for c in inspect(engine).get_columns("mailing_lists")}


def test_0020_keeps_held_posts_and_their_requests_and_never_gives_an_id_again(
    lab_root: Path,
):
    """The rebuild for AUTOINCREMENT (SQLite) keeps every row and its id, the requests
    still point at their posts, and the largest id is not given again."""
    url = f"sqlite:///{lab_root / 'migrations' / (unique('m0020') + '.db')}"
    from mtaplugin.manage import domains, lists

    upgrade(url, "0016")  # 0016: the schema before, the same as the model's but for this
    sessions = sessionmaker_for(make_engine(url))
    with sessions.begin() as s:
        domains.create(s, "example.org")
        mlist = lists.create(s, "team@example.org")
        # (Core: the model has columns that later migrations add)
        s.execute(
            insert(HeldMessage.__table__),  # type: ignore[arg-type]
            [
                {"id": n, "mailing_list_id": mlist.id, "raw": b"x", "sender": "a@b.c"}
                for n in (1, 2, 3)
            ],
        )
        s.add(
            PendingRequest(
                token="t3",
                request_type=RequestType.held_message,
                held_message_id=3,
                expires_at=datetime(2027, 1, 1, tzinfo=UTC),
            )
        )
        s.flush()
        s.execute(delete(HeldMessage.__table__).where(HeldMessage.id == 1))  # type: ignore[arg-type]
    upgrade(url)
    sessions = sessionmaker_for(make_engine(url))
    with sessions.begin() as s:
        assert sorted(s.scalars(select(HeldMessage.id))) == [2, 3]
        (req,) = s.scalars(select(PendingRequest))
        assert req.held_message_id == 3
        s.delete(s.get(HeldMessage, 3))  # the newest, and its request with it
    with sessions.begin() as s:
        assert list(s.scalars(select(PendingRequest))) == []
        again = HeldMessage(mailing_list_id=mlist.id, raw=b"y", sender="d@e.f")
        s.add(again)
        s.flush()
        assert again.id == 4


def search_index(db: Engine) -> set[str]:
    """The search index's tables, triggers and (PostgreSQL) functions and indexes."""
    with db.connect() as conn:
        if db.dialect.name == "sqlite":
            rows = conn.execute(
                text("SELECT name FROM sqlite_master WHERE name LIKE '%archive_fts%'")
            )
        else:
            rows = conn.execute(
                text(
                    "SELECT relname FROM pg_class WHERE relname LIKE '%archive_fts%' "
                    "UNION SELECT proname FROM pg_proc "
                    "WHERE proname IN ('trg_archive_fts', 'mtaplugin_archive_doc', "
                    "'mtaplugin_ts_config') UNION SELECT tgname FROM pg_trigger "
                    "WHERE tgname = 'trg_archive_fts'"
                )
            )
        return {r[0] for r in rows}


def test_the_search_index_comes_and_goes_with_its_revision(engine: Engine, empty_url: str):
    """What the model does not hold (the archive's search index) is still made by its
    migration and removed by its downgrade, without a trace."""
    found = search_index(engine)
    if engine.dialect.name == "sqlite":
        assert {"archive_fts", "trg_archive_fts_ins", "trg_archive_fts_upd"} <= found
    else:
        assert {
            "archive_fts",
            "ix_archive_fts_doc",
            "trg_archive_fts",
            "mtaplugin_ts_config",
        } <= found
    command.downgrade(alembic_config(empty_url), "0023")
    engine.dispose()
    assert search_index(engine) == set()
    command.upgrade(alembic_config(empty_url), "head")
    engine.dispose()
    assert search_index(engine) == found
