"""a held post's notices are made by the worker, after the SMTP answer

Revision ID: 0049
Revises: 0048

The moderators' notice of a held post (``list:admin:action:post``, with its moderation
token) and the poster's (``list:user:notice:hold``) were rendered and queued inside the
decision's transaction, under SQLite's one write lock and before the 250.  The decision
now stores the held post with ``notices_due`` set, in the same transaction; the worker
(:mod:`mtaplugin.manage.hold_notices`) makes the notices and clears the flag in one
transaction, so each held post's notices are queued exactly once, even across a kill.

Held posts stored before this migration had their notices already: the column defaults
to false.  The partial index holds only the rows that wait (a few at any moment).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0049"
down_revision: str | None = "0048"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_held_messages_notices_due"


def upgrade() -> None:
    op.add_column(
        "held_messages",
        sa.Column("notices_due", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_index(
        INDEX,
        "held_messages",
        ["id"],
        sqlite_where=sa.text("notices_due"),
        postgresql_where=sa.text("notices_due"),
    )


def downgrade() -> None:
    op.drop_index(INDEX, table_name="held_messages")
    with op.batch_alter_table("held_messages") as batch:
        batch.drop_column("notices_due")
