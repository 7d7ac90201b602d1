"""archive: replies waiting for an ancestor (threading without reading every References)

Revision ID: 0023
Revises: 0021
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "archive_waiting",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("wanted_hash", sa.String(length=32), nullable=False),
        sa.Column("archived_message_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["archived_message_id"],
            ["archived_messages.id"],
            name=op.f("fk_archive_waiting_archived_message_id_archived_messages"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_archive_waiting_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_archive_waiting")),
    )
    with op.batch_alter_table("archive_waiting", schema=None) as batch_op:
        batch_op.create_index(
            "ix_archive_waiting_wanted", ["mailing_list_id", "wanted_hash"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_archive_waiting_archived_message_id"),
            ["archived_message_id"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("archive_waiting", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_archive_waiting_archived_message_id"))
        batch_op.drop_index("ix_archive_waiting_wanted")
    op.drop_table("archive_waiting")
