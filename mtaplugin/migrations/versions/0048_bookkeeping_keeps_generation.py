"""a list's generation no longer moves for member rows no snapshot reads: a nonmember
recorded with no action of their own, and a member's bounce bookkeeping

Revision ID: 0048
Revises: 0047

A list's ``generation`` (migration 0002) tells every process that keeps a snapshot of the
list (the milter's decisions, the worker's fan-out, the REST API's member counts) to read
it again.  Two writes that the SMTP front ends make all day moved it although no snapshot
reads what they change:

- the poster of a held or refused post recorded on the list's nonmember roster
  (Mailman's nonmember-moderation rule does the same).  A nonmember row with no
  ``moderation_action`` decides exactly as no row: the list's nonmember settings and
  default apply to both (``posting/rules/moderation.py``);
- a member's bounce score, last bounce and warnings (``bounces/processing.py``).  The
  member's delivery status, which a bounce score that passes the threshold changes, still
  moves it.

On a list that receives spam and bounces, each of them made every process read the
whole list again, the milter inside its decisions' transactions: under the load mix of
``bench/load.py`` (15 % nonmember posts, 10 % bounces) nearly every decision reloaded
its list.  Any other change to a member row still moves the generation, as before: the
update trigger names every column of ``members`` but the bookkeeping ones
(:data:`BOOKKEEPING`), and ``tests/unit/test_generation_triggers.py`` fails when a column
is added to ``members`` without this trigger being made again to cover it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0048"
down_revision: str | None = "0047"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: the columns of ``members`` that no snapshot reads: a change to them alone keeps the
#: list's generation
BOOKKEEPING = ("bounce_score", "last_bounce_received", "last_warning_sent", "total_warnings_sent")

BUMP = "UPDATE mailing_lists SET generation = generation + 1 WHERE "

#: an inserted row that moves nothing: a nonmember with no action of their own
QUIET_INSERT = "role = 'nonmember' AND moderation_action IS NULL"


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def watched_columns() -> list[str]:
    """The columns of ``members`` whose change moves the list's generation."""
    columns = sa.inspect(op.get_bind()).get_columns("members")
    return [c["name"] for c in columns if c["name"] not in BOOKKEEPING]


def upgrade() -> None:
    if _postgresql():
        _postgresql_up()
    else:
        _sqlite_up()


def _sqlite_up() -> None:
    changed = " OR ".join(f'NEW."{c}" IS NOT OLD."{c}"' for c in watched_columns())
    quiet = " AND ".join(f"NEW.{part}" for part in QUIET_INSERT.split(" AND "))
    op.execute("DROP TRIGGER IF EXISTS trg_gen_members_ins")
    op.execute(
        "CREATE TRIGGER trg_gen_members_ins AFTER INSERT ON members FOR EACH ROW "
        f"WHEN NOT ({quiet}) BEGIN {BUMP}id = NEW.mailing_list_id; END"
    )
    op.execute("DROP TRIGGER IF EXISTS trg_gen_members_upd")
    op.execute(
        "CREATE TRIGGER trg_gen_members_upd AFTER UPDATE ON members FOR EACH ROW "
        f"WHEN {changed} "
        f"BEGIN {BUMP}id IN (NEW.mailing_list_id, OLD.mailing_list_id); END"
    )


def _postgresql_up() -> None:
    # Statement triggers with transition tables (migration 0005): no column list and no
    # WHEN, so the rows are sifted in the function.  A row's columns as jsonb, less the
    # bookkeeping ones, compare every other column, those added later included.
    skip = "ARRAY[" + ", ".join(f"'{c}'" for c in BOOKKEEPING) + "]"
    op.execute(
        "CREATE OR REPLACE FUNCTION trg_gen_members_ins() RETURNS trigger LANGUAGE plpgsql "
        f"AS $$ BEGIN {BUMP}id IN (SELECT mailing_list_id FROM new_rows "
        f"WHERE NOT ({QUIET_INSERT})); RETURN NULL; END $$"
    )
    moved = (
        "SELECT {side}.mailing_list_id FROM new_rows n JOIN old_rows o ON o.id = n.id "
        f"WHERE to_jsonb(n) - {skip}::text[] IS DISTINCT FROM to_jsonb(o) - {skip}::text[]"
    )
    op.execute(
        "CREATE OR REPLACE FUNCTION trg_gen_members_upd() RETURNS trigger LANGUAGE plpgsql "
        f"AS $$ BEGIN {BUMP}id IN ({moved.format(side='n')} UNION {moved.format(side='o')}); "
        "RETURN NULL; END $$"
    )


def downgrade() -> None:
    if _postgresql():
        op.execute(
            "CREATE OR REPLACE FUNCTION trg_gen_members_ins() RETURNS trigger LANGUAGE plpgsql "
            f"AS $$ BEGIN {BUMP}id IN (SELECT mailing_list_id FROM new_rows); "
            "RETURN NULL; END $$"
        )
        op.execute(
            "CREATE OR REPLACE FUNCTION trg_gen_members_upd() RETURNS trigger LANGUAGE plpgsql "
            f"AS $$ BEGIN {BUMP}id IN (SELECT mailing_list_id FROM new_rows "
            "UNION SELECT mailing_list_id FROM old_rows); RETURN NULL; END $$"
        )
        return
    op.execute("DROP TRIGGER IF EXISTS trg_gen_members_ins")
    op.execute(
        "CREATE TRIGGER trg_gen_members_ins AFTER INSERT ON members FOR EACH ROW "
        f"BEGIN {BUMP}id = NEW.mailing_list_id; END"
    )
    op.execute("DROP TRIGGER IF EXISTS trg_gen_members_upd")
    op.execute(
        "CREATE TRIGGER trg_gen_members_upd AFTER UPDATE ON members FOR EACH ROW "
        f"BEGIN {BUMP}id IN (NEW.mailing_list_id, OLD.mailing_list_id); END"
    )
