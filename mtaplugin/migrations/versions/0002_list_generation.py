"""list generation counter, kept by triggers

Revision ID: 0002
Revises: 0001

``mailing_lists.generation`` moves whenever anything a posting decision reads changes:
the list row (except its post counter), its members, their addresses and users, its bans
(a global ban moves every list) and its header matches.  Triggers keep it, so that every
writer -- the CLI, the API, another mail host, an admin's own SQL -- invalidates the
per-process list snapshots of the milter.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BUMP = "UPDATE mailing_lists SET generation = generation + 1 WHERE "

# (trigger name, table, event, which lists move: SQL condition on mailing_lists.id)
TRIGGERS: list[tuple[str, str, str, str]] = [
    ("trg_gen_members_ins", "members", "INSERT", "id = NEW.mailing_list_id"),
    (
        "trg_gen_members_upd",
        "members",
        "UPDATE",
        "id IN (NEW.mailing_list_id, OLD.mailing_list_id)",
    ),
    ("trg_gen_members_del", "members", "DELETE", "id = OLD.mailing_list_id"),
    (
        "trg_gen_addresses_upd",
        "addresses",
        "UPDATE",
        "id IN (SELECT mailing_list_id FROM members WHERE address_id = NEW.id)",
    ),
    (
        "trg_gen_users_upd",
        "users",
        "UPDATE",
        "id IN (SELECT m.mailing_list_id FROM members m JOIN addresses a "
        "ON a.id = m.address_id WHERE a.user_id = NEW.id OR m.user_id = NEW.id)",
    ),
    (
        "trg_gen_bans_ins",
        "bans",
        "INSERT",
        "(NEW.mailing_list_id IS NULL OR id = NEW.mailing_list_id)",
    ),
    (
        "trg_gen_bans_upd",
        "bans",
        "UPDATE",
        "(NEW.mailing_list_id IS NULL OR OLD.mailing_list_id IS NULL "
        "OR id IN (NEW.mailing_list_id, OLD.mailing_list_id))",
    ),
    (
        "trg_gen_bans_del",
        "bans",
        "DELETE",
        "(OLD.mailing_list_id IS NULL OR id = OLD.mailing_list_id)",
    ),
    ("trg_gen_header_matches_ins", "header_matches", "INSERT", "id = NEW.mailing_list_id"),
    (
        "trg_gen_header_matches_upd",
        "header_matches",
        "UPDATE",
        "id IN (NEW.mailing_list_id, OLD.mailing_list_id)",
    ),
    ("trg_gen_header_matches_del", "header_matches", "DELETE", "id = OLD.mailing_list_id"),
]

# The list row itself: any update that leaves the post counter and the generation alone
# is a settings change.  (The WHEN clause also stops the trigger's own update.)
LIST_WHEN = "NEW.post_id = OLD.post_id AND NEW.generation = OLD.generation"


def upgrade() -> None:
    op.add_column(
        "mailing_lists",
        sa.Column("generation", sa.Integer(), server_default="0", nullable=False),
    )
    if op.get_bind().dialect.name == "postgresql":
        _postgresql_up()
    else:
        _sqlite_up()


def _sqlite_up() -> None:
    for name, table, event, where in TRIGGERS:
        op.execute(
            f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW BEGIN {BUMP}{where}; END"
        )
    op.execute(
        "CREATE TRIGGER trg_gen_mailing_lists_upd AFTER UPDATE ON mailing_lists "
        f"FOR EACH ROW WHEN {LIST_WHEN} "
        "BEGIN UPDATE mailing_lists SET generation = generation + 1 WHERE id = NEW.id; END"
    )


def _postgresql_up() -> None:
    for name, table, event, where in TRIGGERS:
        op.execute(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN {BUMP}{where}; RETURN NULL; END $$"
        )
        op.execute(
            f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()"
        )
    # BEFORE UPDATE: the row's own generation moves in the same write (no second update).
    op.execute(
        "CREATE FUNCTION trg_gen_mailing_lists_upd() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN NEW.generation := OLD.generation + 1; RETURN NEW; END $$"
    )
    op.execute(
        "CREATE TRIGGER trg_gen_mailing_lists_upd BEFORE UPDATE ON mailing_lists "
        f"FOR EACH ROW WHEN ({LIST_WHEN}) EXECUTE FUNCTION trg_gen_mailing_lists_upd()"
    )


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    names = [(n, t) for n, t, _e, _w in TRIGGERS] + [("trg_gen_mailing_lists_upd", "mailing_lists")]
    for name, table in names:
        if postgresql:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    with op.batch_alter_table("mailing_lists") as batch:
        batch.drop_column("generation")
