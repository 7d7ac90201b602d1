"""The required-work floor on PostgreSQL (``noop_milter --journal postgresql://...``): the
journal, the archive and its full-text index of :mod:`mtaplugin.testing.noop_journal`
in a PostgreSQL database, written as mtaplugin writes its own.

- The connection is opened as :func:`mtaplugin.db.make_engine` opens mtaplugin's: psycopg 3,
  ``connect_timeout`` of the packaged ``[database] timeout``, ``application_name``, psycopg's
  own prepared statements (mtaplugin's ``prepared_statements = true``), not in autocommit
  (the first statement begins the transaction, the commit ends it).  mtaplugin sets no
  ``synchronous_commit`` of its own: the server's applies to both (PostgreSQL's default,
  ``on``: a commit is in the server's write-ahead log on disk before it returns).
  Not done: SQLAlchemy's ``pool_pre_ping`` (a round trip when a connection is taken),
  which no milter needs to keep its promise.
- The journal row: one ``INSERT`` and one ``COMMIT`` (mtaplugin's ``accepted_posts``, its
  other columns left out).
- The drain: the batch's rows taken ``FOR UPDATE SKIP LOCKED``, oldest first (as
  :mod:`mtaplugin.accepted.drain` on PostgreSQL), each post stored zlib-compressed in
  ``archive`` with its ``tsvector`` in ``archive_fts`` (a GIN index) in one statement,
  the statements of a batch sent in a pipeline, the rows deleted in one statement, one
  commit.  The document is mtaplugin's (``mtaplugin_archive_doc``, migration 0046): the
  subject at the weight A, the sender's name B, the address C (also cut at ``@.+-_``), the
  text D (its first 100 000 characters), in the configuration of a list whose preferred
  language is English; mtaplugin's trigger also looks the configuration up in the list's
  row, which the floor does not.  No pause between batches (mtaplugin pauses on SQLite
  only).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from email.utils import parseaddr
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

    from mtaplugin.testing.postgres import PostgresServer

#: the text search configuration of the floor's list (mtaplugin's for ``en``)
CONFIG = "english"

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS journal (id bigserial PRIMARY KEY, list_id integer NOT NULL, "
    "raw bytea NOT NULL, accepted_at double precision NOT NULL)",
    "CREATE TABLE IF NOT EXISTS archive (id bigserial PRIMARY KEY, list_id integer NOT NULL, "
    "raw bytea NOT NULL, accepted_at double precision NOT NULL, "
    "archived_at double precision NOT NULL)",
    "CREATE TABLE IF NOT EXISTS archive_fts (message_id bigint PRIMARY KEY "
    "REFERENCES archive(id) ON DELETE CASCADE, doc tsvector NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ix_archive_fts_doc ON archive_fts USING gin (doc)",
)
INSERT = "INSERT INTO journal (list_id, raw, accepted_at) VALUES (%s, %s, %s)"
_TAKE = (
    "SELECT id, list_id, raw, accepted_at FROM journal ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED"
)
_ARCHIVE = (
    "WITH a AS (INSERT INTO archive (list_id, raw, accepted_at, archived_at) "
    "VALUES (%(list_id)s, %(packed)s, %(accepted_at)s, %(now)s) RETURNING id) "
    "INSERT INTO archive_fts (message_id, doc) SELECT a.id, "
    f"setweight(to_tsvector('{CONFIG}', %(subject)s), 'A') || "
    f"setweight(to_tsvector('{CONFIG}', %(name)s), 'B') || "
    f"setweight(to_tsvector('{CONFIG}', %(address)s || ' ' || "
    "translate(%(address)s, '@.+-_', '     ')), 'C') || "
    f"setweight(to_tsvector('{CONFIG}', left(%(text)s, 100000)), 'D') FROM a"
)
_DELETE = "DELETE FROM journal WHERE id = ANY(%s)"


def is_url(target: Path | str) -> bool:
    """Whether the floor's ``--journal`` names a PostgreSQL database (else a SQLite file)."""
    return isinstance(target, str) and target.startswith("postgresql")


def connect(url: str, timeout: float) -> psycopg.Connection[Any]:
    """A connection to the database of ``url`` (SQLAlchemy's ``postgresql+psycopg://``
    or libpq's ``postgresql://``) with mtaplugin's settings."""
    import psycopg

    conninfo = re.sub(r"^postgresql\+\w+://", "postgresql://", url)
    return psycopg.connect(
        conninfo, connect_timeout=max(1, int(timeout)), application_name="mtaplugin"
    )


def drain_batch(
    conn: psycopg.Connection[Any],
    batch: int,
    pack: Callable[[bytes], bytes],
    text_of: Callable[[bytes], tuple[str, str, str]],
) -> int:
    """Archive and index up to ``batch`` journal rows in one transaction; how many."""
    try:
        with conn.cursor() as cur:
            rows = cur.execute(_TAKE, (batch,)).fetchall()
            if rows:
                now = time.time()
                params = []
                for _pk, list_id, raw, accepted_at in rows:
                    subject, text, sender = text_of(bytes(raw))
                    name, address = parseaddr(sender)
                    params.append({"list_id": list_id, "packed": pack(bytes(raw)),
                                   "accepted_at": accepted_at, "now": now, "subject": subject,
                                   "name": name, "address": address, "text": text})  # fmt: skip
                cur.executemany(_ARCHIVE, params)
                cur.execute(_DELETE, ([pk for pk, *_ in rows],))
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return len(rows)


#: PostgreSQL's own defaults, which the benches' throw-away server turns off
DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}


def make_durable(server: PostgresServer) -> None:
    """Start ``server`` again with PostgreSQL's defaults for durability, every commit
    flushed before it returns (the benches' ``--pg-durable``).  Its command line turns
    them off, and a command line wins over ``ALTER SYSTEM``: a restart it is."""
    server.stop()
    durable = " ".join(f"-c {name}={value}" for name, value in DURABLE.items())
    server.options = f"{server.options} {durable}".strip()
    server.resume()
