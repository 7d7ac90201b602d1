"""news_queue: list posts waiting for the news server (the Usenet gateway)

Revision ID: 0018
Revises: 0016
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mtaplugin.model.base

revision: str = "0018"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "news_queue",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("newsgroup", sa.String(length=255), nullable=False),
        sa.Column("article", sa.LargeBinary(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("queued_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column(
            "next_attempt_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("failed", sa.Boolean(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_news_queue_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_news_queue")),
    )
    with op.batch_alter_table("news_queue", schema=None) as batch_op:
        batch_op.create_index("ix_news_queue_due", ["failed", "next_attempt_at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_news_queue_mailing_list_id"), ["mailing_list_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("news_queue", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_news_queue_mailing_list_id"))
        batch_op.drop_index("ix_news_queue_due")
    op.drop_table("news_queue")
