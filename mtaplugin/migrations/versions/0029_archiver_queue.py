"""archiver_queue: archived posts waiting for an external archiver

Revision ID: 0029
Revises: 0025
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mtaplugin.model.base

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "archiver_queue",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("archiver", sa.String(length=64), nullable=False),
        sa.Column("message", sa.LargeBinary(), nullable=False),
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
            name=op.f("fk_archiver_queue_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_archiver_queue")),
    )
    with op.batch_alter_table("archiver_queue", schema=None) as batch_op:
        batch_op.create_index("ix_archiver_queue_due", ["failed", "next_attempt_at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_archiver_queue_mailing_list_id"), ["mailing_list_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("archiver_queue", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_archiver_queue_mailing_list_id"))
        batch_op.drop_index("ix_archiver_queue_due")
    op.drop_table("archiver_queue")
