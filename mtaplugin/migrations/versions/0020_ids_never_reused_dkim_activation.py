"""held posts and pending requests: ids never reused on SQLite (AUTOINCREMENT); a DKIM
key signs only once DNS publishes it (dkim_keys.activated_at)

Revision ID: 0020
Revises: 0016

DKIM: ``dkim_keys.activated_at``, when ``mtaplugin dkim check`` saw the key in DNS; a key
without it does not sign.  The keys that exist already have been signing: they are
active from their creation.  A domain may now have two keys during a rollover (the one
that signs and its replacement waiting for DNS): ``domain_id`` is no longer unique.

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
down_revision: str | None = "0021"
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
    with op.batch_alter_table("dkim_keys") as batch:
        batch.add_column(sa.Column("activated_at", UTCDateTime(), nullable=True))
        batch.drop_constraint("uq_dkim_keys_domain_id", type_="unique")
        batch.create_index("ix_dkim_keys_domain_id", ["domain_id"])
    op.execute("UPDATE dkim_keys SET activated_at = created_at")


def downgrade() -> None:
    # one key per domain again: a replacement still waiting for DNS is dropped
    op.execute(
        "DELETE FROM dkim_keys WHERE activated_at IS NULL AND domain_id IN "
        "(SELECT domain_id FROM dkim_keys WHERE activated_at IS NOT NULL)"
    )
    with op.batch_alter_table("dkim_keys") as batch:
        batch.drop_index("ix_dkim_keys_domain_id")
        batch.create_unique_constraint("uq_dkim_keys_domain_id", ["domain_id"])
        batch.drop_column("activated_at")
    _rebuild(False)
