"""outbox lease: which worker holds a row, and until when

Revision ID: 0003
Revises: 0002

A worker claims the outbox rows it is about to send by writing its name in
``outbox.claimed_by`` and the end of its lease in ``outbox.claimed_until``, in the same
transaction that picks them.  Another worker (on another mail host sharing the database)
skips a row while the lease runs; a worker that died leaves its lease behind, and its rows
are picked again once it has run out.  Both columns are empty on a row nobody holds.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mtaplugin.model.base

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("outbox", sa.Column("claimed_by", sa.String(length=128), nullable=True))
    op.add_column(
        "outbox",
        sa.Column("claimed_until", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("claimed_until")
        batch.drop_column("claimed_by")
