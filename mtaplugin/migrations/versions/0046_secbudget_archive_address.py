"""archive search: the sender's address apart from the words anonymous visitors search

Revision ID: 0046
Revises: 0041

Anonymous visitors see addresses obscured (``anne@…``), but a search for
``anne example com`` found the posts of ``anne@example.com``, which confirmed the address
(security review L3).  The index now keeps the address apart, and
:mod:`mtaplugin.archive.search` leaves it out of the searches of those visitors:

- SQLite: the FTS5 table gets a fifth column, ``address``; ``author`` keeps the display
  name only.  FTS5 cannot add a column: the table and its triggers are made again and
  the posts indexed again (in this migration's transaction).
- PostgreSQL: in the ``tsvector``, the display name keeps the weight B and the address
  (whole, and split at ``@ . + - _``) gets the weight C, which nothing else has; the posts
  are indexed again.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0046"
down_revision: str | None = "0041"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# --- SQLite --------------------------------------------------------------------------------

TRIGGERS = ("trg_archive_fts_ins", "trg_archive_fts_del", "trg_archive_fts_upd")


def _files(row: str) -> str:
    return (
        f"CASE WHEN json_valid({row}.attachments) THEN coalesce((SELECT group_concat("
        f"json_extract(j.value, '$.name'), ' ') FROM json_each({row}.attachments) AS j "
        f"WHERE j.type = 'object'), '') ELSE '' END"
    )


def _sqlite_index(with_address: bool) -> None:
    """The FTS5 table, its triggers and its rows: with the address apart (this revision)
    or in ``author`` (revision 0022)."""
    columns = "subject, body, files, author" + (", address" if with_address else "")

    def values(row: str) -> str:
        if with_address:
            return f"{row}.subject, {row}.text, {_files(row)}, {row}.sender_name, {row}.sender"
        return f"{row}.subject, {row}.text, {_files(row)}, {row}.sender_name || ' ' || {row}.sender"

    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("DROP TABLE IF EXISTS archive_fts")
    op.execute(
        f"CREATE VIRTUAL TABLE archive_fts USING fts5({columns}, "
        "content='', tokenize='unicode61 remove_diacritics 2')"
    )
    triggers = {
        "trg_archive_fts_ins": (
            "AFTER INSERT ON archived_messages WHEN NOT new.removed BEGIN "
            f"INSERT INTO archive_fts(rowid, {columns}) VALUES (new.id, {values('new')}); END"
        ),
        "trg_archive_fts_del": (
            "AFTER DELETE ON archived_messages WHEN NOT old.removed BEGIN "
            f"INSERT INTO archive_fts(archive_fts, rowid, {columns}) "
            f"VALUES ('delete', old.id, {values('old')}); END"
        ),
        "trg_archive_fts_upd": (
            "AFTER UPDATE OF subject, text, attachments, sender, sender_name, removed "
            "ON archived_messages BEGIN "
            f"INSERT INTO archive_fts(archive_fts, rowid, {columns}) "
            f"SELECT 'delete', old.id, {values('old')} WHERE NOT old.removed; "
            f"INSERT INTO archive_fts(rowid, {columns}) "
            f"SELECT new.id, {values('new')} WHERE NOT new.removed; END"
        ),
    }
    for name, body in triggers.items():
        op.execute(f"CREATE TRIGGER {name} {body}")
    op.execute(
        f"INSERT INTO archive_fts(rowid, {columns}) SELECT new.id, {values('new')} "
        "FROM archived_messages AS new WHERE NOT new.removed"
    )


# --- PostgreSQL ----------------------------------------------------------------------------


def _pg_index(apart: bool) -> None:
    """The document function (the address ``apart`` at the weight C, or with the name at
    B as in 0022) and every post indexed again with it."""
    address = "coalesce(sender, '') || ' ' || translate(coalesce(sender, ''), '@.+-_', '     ')"
    author = (
        f"setweight(to_tsvector(cfg, coalesce(sender_name, '')), 'B') || "
        f"setweight(to_tsvector(cfg, {address}), 'C') || "
        if apart
        else f"setweight(to_tsvector(cfg, coalesce(sender_name, '') || ' ' || {address}), 'B') || "
    )
    op.execute(
        "CREATE OR REPLACE FUNCTION mtaplugin_archive_doc(cfg regconfig, subject text, "
        "body text, attachments json, sender text, sender_name text) RETURNS tsvector "
        "LANGUAGE sql IMMUTABLE AS $$ SELECT "
        "setweight(to_tsvector(cfg, coalesce(subject, '')), 'A') || "
        f"{author}"
        "setweight(to_tsvector(cfg, files || ' ' || translate(files, '.-_', '   ')), 'B') || "
        "setweight(to_tsvector(cfg, left(coalesce(body, ''), 100000)), 'D') "
        "FROM (SELECT CASE WHEN json_typeof(attachments) = 'array' THEN "
        "coalesce((SELECT string_agg(a ->> 'name', ' ') FROM json_array_elements(attachments) a "
        "WHERE json_typeof(a) = 'object'), '') ELSE '' END AS files) AS f $$"
    )
    op.execute(
        "UPDATE archive_fts AS f SET doc = mtaplugin_archive_doc("
        "mtaplugin_ts_config(l.preferred_language), m.subject, m.text, m.attachments, "
        "m.sender, m.sender_name) FROM archived_messages m "
        "JOIN mailing_lists l ON l.id = m.mailing_list_id WHERE f.message_id = m.id"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _pg_index(apart=True)
    else:
        _sqlite_index(with_address=True)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _pg_index(apart=False)
    else:
        _sqlite_index(with_address=False)
