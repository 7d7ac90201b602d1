"""post_rates: posts per sender and per list in ten-minute windows ([rules] rate limits)

Revision ID: 0024
Revises: 0025
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mtaplugin.model.base import UTCDateTime

revision: str = "0024"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "post_rates",
        sa.Column("key", sa.String(length=400), nullable=False),
        sa.Column("window_start", UTCDateTime(timezone=True), nullable=False),
        sa.Column("posts", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", "window_start", name=op.f("pk_post_rates")),
    )


def downgrade() -> None:
    op.drop_table("post_rates")
