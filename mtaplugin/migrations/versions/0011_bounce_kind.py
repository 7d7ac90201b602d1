"""bounce_events: what the DSN said (kind, status code, diagnostic)

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("bounce_events") as batch:
        batch.add_column(
            sa.Column(
                "kind",
                sa.Enum(
                    "hard", "policy", "delayed", name="bouncekind", native_enum=False, length=32
                ),
                nullable=False,
                server_default="hard",
            )
        )
        batch.add_column(sa.Column("status", sa.String(16), nullable=False, server_default=""))
        batch.add_column(sa.Column("diagnostic", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("bounce_events") as batch:
        batch.drop_column("diagnostic")
        batch.drop_column("status")
        batch.drop_column("kind")
