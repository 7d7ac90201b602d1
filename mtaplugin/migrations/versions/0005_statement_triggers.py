"""PostgreSQL: move list generations once per statement, not once per member row

Revision ID: 0005
Revises: 0004

A mass subscribe of 100 000 members fired 100 000 row triggers, each updating the same
mailing_lists row; under MVCC every update leaves a row version behind, and the run
slowed down quadratically (about 450 members/s and falling).  Statement-level triggers
with transition tables (PostgreSQL >= 10) bump each touched list once per statement.
SQLite updates rows in place and keeps its row triggers (migration 0002).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BUMP = "UPDATE mailing_lists SET generation = generation + 1 WHERE id IN "

STATEMENT_TRIGGERS = [
    ("trg_gen_members_ins", "INSERT", "REFERENCING NEW TABLE AS new_rows",
     "(SELECT mailing_list_id FROM new_rows)"),
    ("trg_gen_members_upd", "UPDATE", "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
     "(SELECT mailing_list_id FROM new_rows UNION SELECT mailing_list_id FROM old_rows)"),
    ("trg_gen_members_del", "DELETE", "REFERENCING OLD TABLE AS old_rows",
     "(SELECT mailing_list_id FROM old_rows)"),
]  # fmt: skip

ROW_WHERE = {
    "trg_gen_members_ins": "id = NEW.mailing_list_id",
    "trg_gen_members_upd": "id IN (NEW.mailing_list_id, OLD.mailing_list_id)",
    "trg_gen_members_del": "id = OLD.mailing_list_id",
}


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    if not _postgresql():
        return
    for name, event, referencing, which in STATEMENT_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON members")
        op.execute(
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN {BUMP}{which}; RETURN NULL; END $$"
        )
        op.execute(
            f"CREATE TRIGGER {name} AFTER {event} ON members {referencing} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
        )


def downgrade() -> None:
    if not _postgresql():
        return
    for name, event, _referencing, _which in STATEMENT_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON members")
        op.execute(
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN UPDATE mailing_lists SET generation = generation + 1 "
            f"WHERE {ROW_WHERE[name]}; RETURN NULL; END $$"
        )
        op.execute(
            f"CREATE TRIGGER {name} AFTER {event} ON members FOR EACH ROW EXECUTE FUNCTION {name}()"
        )
