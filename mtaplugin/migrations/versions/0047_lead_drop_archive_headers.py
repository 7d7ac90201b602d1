"""drop archived_messages.headers: written empty since the archive keeps its size down;
the pages read the header fields from their own columns and from the post itself

Revision ID: 0047
Revises: 0033
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0047"
down_revision: str | None = "0033"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Native on SQLite >= 3.35 and PostgreSQL: no table rebuild, so the archive's search
    # triggers (migrations 0022, 0046) stay as they are.
    op.execute("ALTER TABLE archived_messages DROP COLUMN headers")


def downgrade() -> None:
    op.add_column(
        "archived_messages",
        sa.Column("headers", sa.JSON(), nullable=False, server_default=sa.text("'{}'")),
    )
