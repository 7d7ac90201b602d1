"""big lists: the outbox's progress offset; the members' (list, role) index ordered by id

The outbox records how far an attempt got (an offset into a row's recipients, and the few
before it still to do) instead of rewriting the recipients still to do after every chunk.
The members' (list, role) index gets the id as its last column, so that a roster page in
member order (the REST API's paging) is a walk of the index on PostgreSQL too.

Revision ID: 0031
Revises: 0029
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("progress", sa.Integer(), server_default="0", nullable=False))
        batch.add_column(sa.Column("retry", sa.JSON(), server_default="[]", nullable=False))
    with op.batch_alter_table("members") as batch:
        batch.drop_index("ix_members_list_role")
        batch.create_index("ix_members_list_role", ["mailing_list_id", "role", "id"])


def downgrade() -> None:
    with op.batch_alter_table("members") as batch:
        batch.drop_index("ix_members_list_role")
        batch.create_index("ix_members_list_role", ["mailing_list_id", "role"])
    # The recipients still to do go back into ``recipients`` first.
    outbox = sa.table(
        "outbox",
        sa.column("id", sa.Integer()),
        sa.column("recipients", sa.JSON()),
        sa.column("progress", sa.Integer()),
        sa.column("retry", sa.JSON()),
    )
    conn = op.get_bind()
    rows = conn.execute(
        sa.select(outbox.c.id, outbox.c.recipients, outbox.c.progress, outbox.c.retry).where(
            outbox.c.progress > 0
        )
    ).all()
    for r in rows:
        left = list(r.retry or []) + list(r.recipients[r.progress :])
        conn.execute(
            sa.update(outbox).where(outbox.c.id == r.id).values(recipients=left, progress=0)
        )
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("retry")
        batch.drop_column("progress")
