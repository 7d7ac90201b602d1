"""Filing a new post in the archive: the usual post in a few Core statements.

:func:`file` stores a post as :func:`mtaplugin.archive.reading.read` read it and threads
it as :func:`mtaplugin.archive.threads.place` does.  The worker does this for every
accepted post, so the usual post costs no ORM object and no flush:

- one statement looks up its Message-ID hash and those of its ancestors (the unique
  index) -- a post the archive holds already is not stored again; the nearest ancestor
  held is its parent -- and the replies waiting for it
  (:class:`~mtaplugin.model.archive.ArchiveWaiting`);
- with none waiting: a post whose parent is archived joins the parent's thread (its
  count moves by one, in SQL); a post with no archived ancestor starts a thread, written
  first with ``posts = 1``; then the post is inserted with its thread and parent in one
  statement (the full-text index follows by trigger), and the ancestors nearer than its
  parent are noted as waited for.

Any other post -- replies waiting for it, a reply known by its subject only, a parent
outside every thread -- takes the general path: an ORM object threaded by
:func:`~mtaplugin.archive.threads.place`, with the same result.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Connection,
    Insert,
    Row,
    Table,
    bindparam,
    insert,
    literal_column,
    select,
    union_all,
)
from sqlalchemy.orm import Session

from mtaplugin.archive import threads
from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.archive.reading import Reading
from mtaplugin.model.archive import ArchivedMessage, ArchiveThread, ArchiveWaiting, pack

MESSAGES = cast(Table, ArchivedMessage.__table__)
THREADS = cast(Table, ArchiveThread.__table__)
WAITING = cast(Table, ArchiveWaiting.__table__)
M, W = MESSAGES.c, WAITING.c

# Built once: building a statement costs more than running it.
_WAITS = select(
    W.wanted_hash, W.archived_message_id, W.wanted_hash, W.archived_message_id, literal_column("1")
).where(W.mailing_list_id == bindparam("list_id"), W.wanted_hash == bindparam("wanted"))


def _known(hashes: ColumnElement[bool]) -> CompoundSelect[*tuple[Any, ...]]:
    """The posts of the list with these Message-ID hashes (its own, its ancestors'), and
    (``waits``) the replies waiting for its own: one statement."""
    posts = select(
        M.message_id_hash, M.id, M.message_id, M.thread_id, literal_column("0").label("waits")
    ).where(M.mailing_list_id == bindparam("list_id"), hashes)
    return union_all(posts, _WAITS)


#: a post that names no ancestor: its own hash only (no expanding IN to render each time)
_KNOWN_ONE = _known(M.message_id_hash == bindparam("wanted"))
_KNOWN = _known(M.message_id_hash.in_(bindparam("hashes", expanding=True)))
_NEW_THREAD = insert(THREADS)
_NEW_POST = insert(MESSAGES)
_WAIT = insert(WAITING)


def values(list_id: int, raw: bytes, reading: Reading, now: datetime) -> dict[str, Any]:
    """The archived post's row (its columns, as :func:`new_message` sets them)."""
    return {
        "mailing_list_id": list_id,
        "message_id": reading.message_id[:998],
        "message_id_hash": reading.message_id_hash,
        "in_reply_to": reading.in_reply_to[:998],
        "references": reading.references,
        "sender": reading.sender,
        "sender_name": reading.sender_name,
        "subject": reading.subject,
        "date": reading.date or now,
        "archived_at": now,
        "text": reading.text,
        "attachments": reading.attachments,
        "thread_id": None,
        "parent_id": None,
        "removed": False,
        "removed_at": None,
    }


def new_message(list_id: int, raw: bytes, reading: Reading, now: datetime) -> ArchivedMessage:
    msg = ArchivedMessage(**values(list_id, raw, reading, now))
    msg.raw = raw
    return msg


def file(session: Session, list_id: int, raw: bytes, reading: Reading, now: datetime) -> int | None:
    """Store and thread the post ``raw`` of the list ``list_id`` as ``reading`` read it: the
    archived post's id, or None when the list's archive holds its Message-ID already."""
    row = values(list_id, raw, reading, now)
    order = threads.ancestors(row["in_reply_to"], row["references"])
    hashes = {message_id_hash(mid): mid for mid in order}
    session.flush()  # what the session holds is written before it is looked up
    conn = session.connection()
    known, waited = _look_up(conn, list_id, reading.message_id_hash, list(hashes))
    if reading.message_id_hash in known:
        return None
    parent = next((known[h] for h in hashes if h in known), None)
    when: datetime = row["date"]
    if waited or (parent is not None and parent.thread_id is None):
        return _placed(session, list_id, raw, reading, now)
    if parent is None:
        key = threads.subject_key(reading.subject)
        if not order and key and threads.is_reply(reading.subject):
            return _placed(session, list_id, raw, reading, now)  # perhaps a thread's, by subject
        thread_id = _inserted(
            conn,
            _NEW_THREAD,
            {
                "mailing_list_id": list_id,
                "subject": threads.thread_subject(reading.subject),
                "subject_key": key,
                "started_at": when,
                "last_post_at": when,
                "posts": 1,
            },
        )
    else:
        thread_id = parent.thread_id
        threads.count_in(session, thread_id, when)
        row["parent_id"] = parent.id
    row["thread_id"] = thread_id
    row["raw"] = pack(raw)
    pk = _inserted(conn, _NEW_POST, row)
    wanted = []
    for mid in order:
        if parent is not None and mid == parent.message_id:
            break
        wanted.append(
            {
                "mailing_list_id": list_id,
                "wanted_hash": message_id_hash(mid),
                "archived_message_id": pk,
            }
        )
    if wanted:
        conn.execute(_WAIT, wanted)
    return pk


def _inserted(conn: Connection, statement: Insert, params: dict[str, Any]) -> int:
    """The primary key of the row ``statement`` inserts."""
    key = conn.execute(statement, params).inserted_primary_key
    assert key is not None
    return int(key[0])


def _look_up(
    conn: Connection, list_id: int, own: str, ancestors: list[str]
) -> tuple[dict[str, Row[Any]], bool]:
    """The list's posts with the hash ``own`` or one of ``ancestors`` (by hash), and whether
    replies wait for ``own``."""
    params: dict[str, Any] = {"list_id": list_id, "wanted": own}
    if ancestors:
        params["hashes"] = [own, *ancestors]
    known: dict[str, Row[Any]] = {}
    waited = False
    for found in conn.execute(_KNOWN if ancestors else _KNOWN_ONE, params):
        if found.waits:
            waited = True
        else:
            known[found.message_id_hash] = found
    return known, waited


def _placed(session: Session, list_id: int, raw: bytes, reading: Reading, now: datetime) -> int:
    """The general path: the post as an ORM object, threaded by :func:`threads.place`."""
    msg = new_message(list_id, raw, reading, now)
    session.add(msg)
    session.flush()
    threads.place(session, msg)
    session.flush()
    return msg.id
