"""Migration 0040: list settings stored with a line break or a control character before
the one-line check (L1) are cleaned, so that the list gets its posts again."""

from __future__ import annotations

from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import text

from mtaplugin.db import alembic_config, make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists
from tests.helpers import unique


def test_stored_line_breaks_and_control_characters_are_cleaned(lab_root: Path):
    url = f"sqlite:///{lab_root / 'migrations' / (unique('m0040') + '.db')}"
    (lab_root / "migrations").mkdir(exist_ok=True)
    before = ScriptDirectory.from_config(alembic_config(url)).get_revision("0040").down_revision
    assert isinstance(before, str)
    upgrade(url, before)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, "example.org")
        bad = lists.create(s, "bad@example.org").id
        good = lists.create(s, "good@example.org", display_name="Good").id
    with engine.begin() as conn:  # as an older version stored them, unchecked
        conn.execute(
            text(
                "UPDATE mailing_lists SET display_name = :d, description = :e,"
                " subject_prefix = :p, reply_to_address = :r WHERE id = :id"
            ),
            {"d": 'Team"\r\nX-Injected: yes', "e": "a\x00b", "p": "[t]\r", "r": "^.*", "id": bad},
        )
    engine.dispose()
    upgrade(url)
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = {
            r.id: r
            for r in conn.execute(
                text(
                    "SELECT id, display_name, description, subject_prefix, reply_to_address"
                    " FROM mailing_lists"
                )
            )
        }
    engine.dispose()
    assert tuple(rows[bad])[1:] == ('Team"  X-Injected: yes', "a b", "[t]", "")
    assert tuple(rows[good])[1:] == ("Good", "", "[Good] ", "")
