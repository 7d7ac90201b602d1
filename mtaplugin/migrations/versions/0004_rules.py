"""posting rules: per-list refusal texts, the sender's authentication on held posts

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Plain ALTER TABLE ADD/DROP COLUMN (SQLite >= 3.35 has both): a batch "move and copy" of
# mailing_lists would trip over the generation triggers that name it.


def upgrade() -> None:
    op.add_column(
        "mailing_lists", sa.Column("refusal_texts", sa.JSON(), nullable=False, server_default="{}")
    )
    op.add_column(
        "held_messages", sa.Column("sender_signals", sa.JSON(), nullable=False, server_default="[]")
    )


def _drop(table: str, column: str) -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    else:
        op.drop_column(table, column)


def downgrade() -> None:
    _drop("held_messages", "sender_signals")
    _drop("mailing_lists", "refusal_texts")
