"""DKIM keys: one per domain, to sign and ARC-seal what its lists send

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mtaplugin.model.base import UTCDateTime

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "dkim_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("domain_id", sa.Integer(), nullable=False),
        sa.Column("selector", sa.String(length=63), nullable=False),
        sa.Column("private_key", sa.Text(), nullable=False),
        sa.Column("signed_headers", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["domain_id"],
            ["domains.id"],
            name=op.f("fk_dkim_keys_domain_id_domains"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dkim_keys")),
        sa.UniqueConstraint("domain_id", name=op.f("uq_dkim_keys_domain_id")),
    )


def downgrade() -> None:
    op.drop_table("dkim_keys")
