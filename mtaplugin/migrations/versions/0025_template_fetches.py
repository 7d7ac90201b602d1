"""template_fetches: the text http(s) template URIs answered (Mailman's file cache)

Revision ID: 0025
Revises: 0022
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mtaplugin.model.base import UTCDateTime

revision: str = "0025"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "template_fetches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uri", sa.String(length=1024), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("fetched_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("refresh_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("attempted_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_template_fetches")),
        sa.UniqueConstraint("uri", name=op.f("uq_template_fetches_uri")),
    )


def downgrade() -> None:
    op.drop_table("template_fetches")
