"""The required-work floor's archiving drain: the least mtaplugin's worker does for the
archive (:mod:`mtaplugin.accepted.drain`), for the floor rows of the benches.

A loop over the journal of :mod:`mtaplugin.testing.noop_journal`: it takes up to
``--batch`` rows, oldest first, and for each stores the post zlib-compressed in
``archive`` (mtaplugin's ``pack``: level 6) and its subject, decoded text and sender in the
FTS5 index ``archive_fts``, then deletes the rows: one transaction per batch, committed
and synced as mtaplugin commits (so a kill -9 leaves every row in the journal or in the
archive, never in neither).  While rows wait it pauses ``--pause`` seconds between
batches (mtaplugin's ``SQLITE_YIELD_SECONDS``: the writers' turn for the lock); with
none it sleeps ``--poll`` seconds (mtaplugin's ``POLL_SECONDS``).  Not done: threading,
the Message-ID's duplicate check, attachments, digests' and news' outlets.  ``PATH`` may
be a PostgreSQL database's URL: the batch is then written as mtaplugin's archive writes
there, a ``tsvector`` per post (:mod:`mtaplugin.testing.noop_pg`), with no pause.

    python -m mtaplugin.testing.noop_archiver PATH [--batch 100] [--poll 0.25]
"""

from __future__ import annotations

import argparse
import email
import signal
import sqlite3
import sys
import time
import zlib
from email.header import decode_header, make_header
from email.message import Message
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from mtaplugin.testing import noop_journal, noop_pg

if TYPE_CHECKING:
    from mtaplugin.testing.noop_journal import Connection

#: rows a batch takes at most (mtaplugin's drain: ``BATCH``)
BATCH = 100
#: on SQLite, seconds between two batches while rows wait (``SQLITE_YIELD_SECONDS``)
SQLITE_PAUSE = 0.1
_ARCHIVE = "INSERT INTO archive (list_id, raw, accepted_at, archived_at) VALUES (?, ?, ?, ?)"
_INDEX = "INSERT INTO archive_fts (rowid, subject, body, author) VALUES (?, ?, ?, ?)"


def field_text(msg: Message, name: str) -> str:
    """A header field's value, RFC 2047 words decoded ("" when absent or unreadable)."""
    value = msg.get(name)
    if value is None:
        return ""
    try:
        return str(make_header(decode_header(str(value))))
    except (ValueError, LookupError):
        return str(value)


def body_text(msg: Message) -> str:
    """The post's first text/plain part, its transfer encoding and charset decoded."""
    for part in msg.walk():
        if part.get_content_type() == "text/plain" and not part.is_multipart():
            payload = part.get_payload(decode=True)
            if not isinstance(payload, bytes):
                return ""
            charset = part.get_content_charset() or "us-ascii"
            try:
                return payload.decode(charset, "replace")
            except LookupError:
                return payload.decode("utf-8", "replace")
    return ""


def text_of(raw: bytes) -> tuple[str, str, str]:
    """(subject, text, sender) of a post: what the index holds."""
    msg = email.message_from_bytes(raw)
    return field_text(msg, "Subject"), body_text(msg), field_text(msg, "From")


def pack(raw: bytes) -> bytes:
    """The post as the archive keeps it (``mtaplugin.model.archive.pack``)."""
    return zlib.compress(raw, 6)


def drain_batch(conn: Connection, batch: int = BATCH) -> int:
    """Archive and index up to ``batch`` journal rows in one transaction; how many."""
    if not isinstance(conn, sqlite3.Connection):
        return noop_pg.drain_batch(conn, batch, pack, text_of)
    rows = conn.execute(
        "SELECT id, list_id, raw, accepted_at FROM journal ORDER BY id LIMIT ?", (batch,)
    ).fetchall()
    if not rows:
        return 0
    try:
        now = time.time()
        for pk, list_id, raw, accepted_at in rows:
            cur = conn.execute(_ARCHIVE, (list_id, pack(raw), accepted_at, now))
            subject, text, sender = text_of(raw)
            conn.execute(_INDEX, (cur.lastrowid, subject, text, sender))
            conn.execute("DELETE FROM journal WHERE id = ?", (pk,))
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return len(rows)


def drain_all(path: Path | str, batch: int = BATCH) -> int:
    """Drain the journal of ``path`` until it is empty; how many posts were archived."""
    conn = noop_journal.connect(path)
    try:
        done = 0
        while n := drain_batch(conn, batch):
            done += n
        return done
    finally:
        conn.close()


def keep_draining(path: Path | str, batch: int, pause: float | None, poll: float) -> None:
    """Drain ``path``'s journal until SIGTERM or SIGINT (the batch in hand is finished);
    ``pause``: between batches (None: mtaplugin's, on SQLite only)."""
    if pause is None:
        pause = 0.0 if noop_pg.is_url(path) else SQLITE_PAUSE
    stopping = False

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    conn = noop_journal.connect(path)
    try:
        while not stopping:
            time.sleep(pause if drain_batch(conn, batch) else poll)
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "path", help="the floor's SQLite file or postgresql:// URL (noop_milter --journal)"
    )
    parser.add_argument("--batch", type=int, default=BATCH, help="rows per transaction")
    parser.add_argument("--pause", type=float, help="seconds between batches (SQLite: 0.1)")
    parser.add_argument("--poll", type=float, default=0.25, help="seconds when none waits")
    args = parser.parse_args(argv)
    noop_journal.create(args.path)
    keep_draining(args.path, args.batch, args.pause, args.poll)
    return 0


if __name__ == "__main__":
    sys.exit(main())
