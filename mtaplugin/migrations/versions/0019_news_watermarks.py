"""news_watermarks: how far each list has gated its linked newsgroup

Revision ID: 0019
Revises: 0016
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mtaplugin.model.base

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "news_watermarks",
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("newsgroup", sa.String(length=255), nullable=False),
        sa.Column("last_number", sa.Integer(), nullable=False),
        sa.Column("updated_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_news_watermarks_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("mailing_list_id", name=op.f("pk_news_watermarks")),
    )


def downgrade() -> None:
    op.drop_table("news_watermarks")
