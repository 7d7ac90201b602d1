"""held posts and pending requests: ids never reused on SQLite (AUTOINCREMENT); a DKIM
key signs only once DNS publishes it (dkim_keys.activated_at)

Revision ID: 0020
Revises: 0016

DKIM: ``dkim_keys.activated_at``, when ``mtaplugin dkim check`` saw the key in DNS; a key
without it does not sign.  The keys that exist already have been signing: they are
active from their creation.

IDs:

SQLite gives an INTEGER PRIMARY KEY without AUTOINCREMENT the largest rowid + 1: when the
newest held post is approved or discarded, the next post held gets its id again, and a
stale moderation notice or browser tab acts on a different post.  With AUTOINCREMENT SQLite
remembers the largest id ever used (sqlite_sequence).  The tables are rebuilt (a batch
"move and copy"; neither has triggers); the current largest id seeds the sequence (an
id freed before this upgrade may still be given once more).
PostgreSQL's sequences never go back: nothing to do there.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mtaplugin.model.base import UTCDateTime

revision: str = "0020"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("held_messages", "pending_requests")


def _rebuild(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in TABLES:
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass


def upgrade() -> None:
    _rebuild(True)
    op.add_column("dkim_keys", sa.Column("activated_at", UTCDateTime(), nullable=True))
    op.execute("UPDATE dkim_keys SET activated_at = created_at")


def downgrade() -> None:
    op.drop_column("dkim_keys", "activated_at")
    _rebuild(False)
