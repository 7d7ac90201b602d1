"""archive on PostgreSQL: archived posts' rows compressed from 128 bytes up

PostgreSQL compresses a row's long values (TOAST) only when the row passes about 2 kB;
most archived posts' plain text is shorter, so it was stored as it is.  A lower
``toast_tuple_target`` makes PostgreSQL compress it inline.  SQLite: nothing to do.

Revision ID: 0032
Revises: 0031
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE archived_messages SET (toast_tuple_target = 128)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE archived_messages RESET (toast_tuple_target)")
