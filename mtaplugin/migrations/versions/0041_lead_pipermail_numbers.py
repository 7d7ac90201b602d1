"""pipermail_numbers: Pipermail's article numbers of imported posts (old links redirect)

Revision ID: 0041
Revises: 0032
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0041"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pipermail_numbers",
        sa.Column(
            "mailing_list_id",
            sa.Integer(),
            sa.ForeignKey("mailing_lists.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("message_id_hash", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("pipermail_numbers")
