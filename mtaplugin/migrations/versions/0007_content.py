"""content filtering and personalized posts

Revision ID: 0007
Revises: 0005

- ``filtered_posts``: posts that content filtering kept from the members of a list whose
  ``filter_action`` is ``preserve``.
- ``outbox.personalize``: a list post whose members each get their own copy (one-click
  unsubscribe link), made by the worker.
- templates move the generation of the lists they decorate (list, domain or site scope),
  so that the milter's list snapshots pick up a new header or footer at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mtaplugin.model.base import UTCDateTime

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BUMP = "UPDATE mailing_lists SET generation = generation + 1 WHERE "
# (trigger, event, which lists move)
_WHO = (
    "({row}.mailing_list_id IS NULL OR id = {row}.mailing_list_id) AND "
    "({row}.domain_id IS NULL OR mail_host IN "
    "(SELECT mail_host FROM domains WHERE domains.id = {row}.domain_id))"
)
TRIGGERS = [
    ("trg_gen_templates_ins", "INSERT", _WHO.format(row="NEW")),
    (
        "trg_gen_templates_upd",
        "UPDATE",
        f"({_WHO.format(row='NEW')}) OR ({_WHO.format(row='OLD')})",
    ),
    ("trg_gen_templates_del", "DELETE", _WHO.format(row="OLD")),
]


def upgrade() -> None:
    op.create_table(
        "filtered_posts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=True),
        sa.Column("message_id", sa.String(length=998), nullable=False),
        sa.Column("sender", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("raw", sa.LargeBinary(), nullable=False),
        sa.Column("filtered_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["mailing_list_id"], ["mailing_lists.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        op.f("ix_filtered_posts_mailing_list_id"), "filtered_posts", ["mailing_list_id"]
    )
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("personalize", sa.JSON(), nullable=True))
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name, event, where in TRIGGERS:
        if postgresql:
            op.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                f"BEGIN {BUMP}{where}; RETURN NULL; END $$"
            )
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON templates FOR EACH ROW "
                f"EXECUTE FUNCTION {name}()"
            )
        else:
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON templates FOR EACH ROW "
                f"BEGIN {BUMP}{where}; END"
            )


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name, _event, _where in TRIGGERS:
        if postgresql:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON templates")
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("personalize")
    op.drop_index(op.f("ix_filtered_posts_mailing_list_id"), table_name="filtered_posts")
    op.drop_table("filtered_posts")
