"""archive: threads, the post's text and attachments, removal

Revision ID: 0021
Revises: 0019
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mtaplugin.model.base

revision: str = "0021"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "archive_threads",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("subject_key", sa.String(length=255), nullable=False),
        sa.Column("started_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_post_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("posts", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_archive_threads_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_archive_threads")),
    )
    with op.batch_alter_table("archive_threads", schema=None) as batch_op:
        batch_op.create_index(
            "ix_archive_threads_recent", ["mailing_list_id", "last_post_at"], unique=False
        )
        batch_op.create_index(
            "ix_archive_threads_subject", ["mailing_list_id", "subject_key"], unique=False
        )
    with op.batch_alter_table("archived_messages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("references", sa.JSON(), nullable=False, server_default="[]"))
        batch_op.add_column(
            sa.Column("sender_name", sa.String(length=320), nullable=False, server_default="")
        )
        batch_op.add_column(sa.Column("text", sa.Text(), nullable=False, server_default=""))
        batch_op.add_column(
            sa.Column("attachments", sa.JSON(), nullable=False, server_default="[]")
        )
        batch_op.add_column(sa.Column("thread_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("parent_id", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("removed", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(
            sa.Column("removed_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_archived_messages_thread_id_archive_threads"),
            "archive_threads",
            ["thread_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_archived_messages_parent_id_archived_messages"),
            "archived_messages",
            ["parent_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch_op.create_index("ix_archived_list_date", ["mailing_list_id", "date"], unique=False)
        batch_op.create_index("ix_archived_thread", ["thread_id", "date"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("archived_messages", schema=None) as batch_op:
        batch_op.drop_index("ix_archived_thread")
        batch_op.drop_index("ix_archived_list_date")
        batch_op.drop_constraint(
            batch_op.f("fk_archived_messages_parent_id_archived_messages"), type_="foreignkey"
        )
        batch_op.drop_constraint(
            batch_op.f("fk_archived_messages_thread_id_archive_threads"), type_="foreignkey"
        )
        for column in (
            "removed_at",
            "removed",
            "parent_id",
            "thread_id",
            "attachments",
            "text",
            "sender_name",
            "references",
        ):
            batch_op.drop_column(column)
    op.drop_table("archive_threads")
