"""topics (Mailman 2.1): the list's topics and each member's choice

Revision ID: 0017
Revises: 0015

- ``mailing_lists.topics_enabled``, ``topics`` ([[name, regex, description], ...]) and
  ``topics_bodylines_limit``;
- ``members.topics`` (the topic names a member wants) and
  ``members.receive_nonmatching_topics``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE ADD/DROP COLUMN (SQLite >= 3.35): a batch "move and copy" would drop
# the generation triggers on these tables (see 0004).
def upgrade() -> None:
    op.add_column(
        "mailing_lists",
        sa.Column("topics_enabled", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column(
        "mailing_lists", sa.Column("topics", sa.JSON(), nullable=False, server_default="[]")
    )
    op.add_column(
        "mailing_lists",
        sa.Column("topics_bodylines_limit", sa.Integer(), nullable=False, server_default="5"),
    )
    op.add_column("members", sa.Column("topics", sa.JSON(), nullable=False, server_default="[]"))
    op.add_column(
        "members",
        sa.Column(
            "receive_nonmatching_topics", sa.Boolean(), nullable=False, server_default=sa.false()
        ),
    )


def downgrade() -> None:
    op.drop_column("members", "receive_nonmatching_topics")
    op.drop_column("members", "topics")
    op.drop_column("mailing_lists", "topics_bodylines_limit")
    op.drop_column("mailing_lists", "topics")
    op.drop_column("mailing_lists", "topics_enabled")
