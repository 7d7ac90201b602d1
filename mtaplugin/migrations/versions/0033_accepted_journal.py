"""accepted_journal: the journal of accepted posts the worker fans out

Revision ID: 0033
Revises: 0040
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mtaplugin.model.base

revision: str = "0033"
down_revision: str | None = "0040"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "accepted_posts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("raw", sa.LargeBinary(), nullable=False),
        sa.Column("post_number", sa.Integer(), nullable=False),
        sa.Column("topics", sa.JSON(), nullable=False),
        sa.Column("archive", sa.Boolean(), nullable=False),
        sa.Column("digest", sa.Boolean(), nullable=False),
        sa.Column("news", sa.Boolean(), nullable=False),
        sa.Column("accepted_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("failed", sa.Boolean(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_accepted_posts_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accepted_posts")),
    )
    with op.batch_alter_table("accepted_posts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_accepted_posts_mailing_list_id"), ["mailing_list_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("accepted_posts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_accepted_posts_mailing_list_id"))
    op.drop_table("accepted_posts")
