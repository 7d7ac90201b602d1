"""one_last_digest: members who left digest delivery while posts waited for the digest

Revision ID: 0016
Revises: 0012
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mtaplugin.model.base

revision: str = "0016"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MODES = ("regular", "plaintext_digests", "mime_digests", "summary_digests")


def upgrade() -> None:
    op.create_table(
        "one_last_digest",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column(
            "delivery_mode",
            sa.Enum(*_MODES, name="deliverymode", native_enum=False, length=32),
            nullable=False,
        ),
        sa.Column("added_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_one_last_digest_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_one_last_digest")),
    )
    with op.batch_alter_table("one_last_digest", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_one_last_digest_mailing_list_id"), ["mailing_list_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("one_last_digest", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_one_last_digest_mailing_list_id"))
    op.drop_table("one_last_digest")
