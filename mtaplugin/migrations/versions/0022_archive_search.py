"""archive search: the full-text index of archived posts, kept in step by triggers

Revision ID: 0022
Revises: 0021

Both dialects get a table ``archive_fts`` outside the SQLAlchemy model (see
:mod:`mtaplugin.archive.search`), written only by triggers on ``archived_messages``, so that
the code that archives posts knows nothing of search and a post is indexed in the same
transaction that archives it.  A removed post (``removed``) leaves the index.

- SQLite: a contentless FTS5 table (``content=''``: the text is stored once, in
  ``archived_messages``); its rowid is the post's id.  Columns: subject, body, files
  (attachment names), author (display name and address).
- PostgreSQL: one ``tsvector`` per post with a GIN index, in the text search configuration
  of the list's preferred language (``mtaplugin_ts_config``: ``de`` -> ``german``, ...,
  ``simple`` where PostgreSQL has none).  The subject weighs most (A), then author and
  attachment names (B), then the text (D); the text is indexed up to its first 100 000
  characters (a tsvector holds at most 1 MB).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0022"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# --- SQLite --------------------------------------------------------------------------------


def _sqlite_values(row: str) -> str:
    """The indexed values of ``row`` (``new`` or ``old``): subject, body, files, author."""
    files = (
        f"CASE WHEN json_valid({row}.attachments) THEN coalesce((SELECT group_concat("
        f"json_extract(j.value, '$.name'), ' ') FROM json_each({row}.attachments) AS j "
        f"WHERE j.type = 'object'), '') ELSE '' END"
    )
    author = f"{row}.sender_name || ' ' || {row}.sender"
    return f"{row}.subject, {row}.text, {files}, {author}"


COLUMNS = "subject, body, files, author"
SQLITE_TRIGGERS = {
    "trg_archive_fts_ins": (
        "AFTER INSERT ON archived_messages WHEN NOT new.removed BEGIN "
        f"INSERT INTO archive_fts(rowid, {COLUMNS}) VALUES (new.id, {_sqlite_values('new')}); "
        "END"
    ),
    "trg_archive_fts_del": (
        "AFTER DELETE ON archived_messages WHEN NOT old.removed BEGIN "
        f"INSERT INTO archive_fts(archive_fts, rowid, {COLUMNS}) "
        f"VALUES ('delete', old.id, {_sqlite_values('old')}); END"
    ),
    "trg_archive_fts_upd": (
        "AFTER UPDATE OF subject, text, attachments, sender, sender_name, removed "
        "ON archived_messages BEGIN "
        f"INSERT INTO archive_fts(archive_fts, rowid, {COLUMNS}) "
        f"SELECT 'delete', old.id, {_sqlite_values('old')} WHERE NOT old.removed; "
        f"INSERT INTO archive_fts(rowid, {COLUMNS}) "
        f"SELECT new.id, {_sqlite_values('new')} WHERE NOT new.removed; END"
    ),
}


def _sqlite_upgrade() -> None:
    op.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS archive_fts USING fts5({COLUMNS}, "
        "content='', tokenize='unicode61 remove_diacritics 2')"
    )
    for name, body in SQLITE_TRIGGERS.items():
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute(f"CREATE TRIGGER {name} {body}")
    op.execute(
        f"INSERT INTO archive_fts(rowid, {COLUMNS}) SELECT new.id, {_sqlite_values('new')} "
        "FROM archived_messages AS new WHERE NOT new.removed"
    )


def _sqlite_downgrade() -> None:
    for name in SQLITE_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("DROP TABLE IF EXISTS archive_fts")


# --- PostgreSQL ----------------------------------------------------------------------------

#: a list's preferred language -> PostgreSQL's text search configuration (when installed)
TS_CONFIGS = {
    "ar": "arabic",
    "ca": "catalan",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "es": "spanish",
    "eu": "basque",
    "fi": "finnish",
    "fr": "french",
    "ga": "irish",
    "hi": "hindi",
    "hu": "hungarian",
    "hy": "armenian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "nb": "norwegian",
    "ne": "nepali",
    "nl": "dutch",
    "nn": "norwegian",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}

PG_FUNCTIONS = ("trg_archive_fts", "mtaplugin_archive_doc", "mtaplugin_ts_config")


def _pg_upgrade() -> None:
    cases = " ".join(f"WHEN '{code}' THEN '{name}'" for code, name in sorted(TS_CONFIGS.items()))
    op.execute(
        "CREATE OR REPLACE FUNCTION mtaplugin_ts_config(lang text) RETURNS regconfig "
        "LANGUAGE sql STABLE AS $$ SELECT coalesce((SELECT c.oid::regconfig FROM pg_ts_config c "
        "WHERE c.cfgnamespace = 'pg_catalog'::regnamespace AND c.cfgname = CASE "
        f"lower(split_part(replace(coalesce(lang, ''), '-', '_'), '_', 1)) {cases} "
        "ELSE 'simple' END), 'simple'::regconfig) $$"
    )
    op.execute(
        "CREATE OR REPLACE FUNCTION mtaplugin_archive_doc(cfg regconfig, subject text, "
        "body text, attachments json, sender text, sender_name text) RETURNS tsvector "
        "LANGUAGE sql IMMUTABLE AS $$ SELECT "
        "setweight(to_tsvector(cfg, coalesce(subject, '')), 'A') || "
        "setweight(to_tsvector(cfg, coalesce(sender_name, '') || ' ' || coalesce(sender, '') "
        "|| ' ' || translate(coalesce(sender, ''), '@.+-_', '     ')), 'B') || "
        "setweight(to_tsvector(cfg, files || ' ' || translate(files, '.-_', '   ')), 'B') || "
        "setweight(to_tsvector(cfg, left(coalesce(body, ''), 100000)), 'D') "
        "FROM (SELECT CASE WHEN json_typeof(attachments) = 'array' THEN "
        "coalesce((SELECT string_agg(a ->> 'name', ' ') FROM json_array_elements(attachments) a "
        "WHERE json_typeof(a) = 'object'), '') ELSE '' END AS files) AS f $$"
    )
    op.execute(
        "CREATE TABLE IF NOT EXISTS archive_fts ("
        "message_id integer PRIMARY KEY REFERENCES archived_messages(id) ON DELETE CASCADE, "
        "doc tsvector NOT NULL)"
    )
    op.execute("CREATE INDEX IF NOT EXISTS ix_archive_fts_doc ON archive_fts USING gin (doc)")
    op.execute(
        "CREATE OR REPLACE FUNCTION trg_archive_fts() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "DECLARE cfg regconfig; BEGIN "
        "IF NEW.removed THEN DELETE FROM archive_fts WHERE message_id = NEW.id; RETURN NULL; "
        "END IF; "
        "SELECT mtaplugin_ts_config(l.preferred_language) INTO cfg FROM mailing_lists l "
        "WHERE l.id = NEW.mailing_list_id; "
        "INSERT INTO archive_fts(message_id, doc) VALUES (NEW.id, mtaplugin_archive_doc("
        "coalesce(cfg, 'simple'::regconfig), NEW.subject, NEW.text, NEW.attachments, "
        "NEW.sender, NEW.sender_name)) "
        "ON CONFLICT (message_id) DO UPDATE SET doc = excluded.doc; RETURN NULL; END $$"
    )
    op.execute("DROP TRIGGER IF EXISTS trg_archive_fts ON archived_messages")
    op.execute(
        "CREATE TRIGGER trg_archive_fts AFTER INSERT OR UPDATE OF subject, text, attachments, "
        "sender, sender_name, removed ON archived_messages "
        "FOR EACH ROW EXECUTE FUNCTION trg_archive_fts()"
    )
    op.execute(
        "INSERT INTO archive_fts(message_id, doc) SELECT m.id, mtaplugin_archive_doc("
        "mtaplugin_ts_config(l.preferred_language), m.subject, m.text, m.attachments, "
        "m.sender, m.sender_name) FROM archived_messages m "
        "JOIN mailing_lists l ON l.id = m.mailing_list_id WHERE NOT m.removed "
        "ON CONFLICT (message_id) DO NOTHING"
    )


def _pg_downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS trg_archive_fts ON archived_messages")
    op.execute("DROP TABLE IF EXISTS archive_fts")
    op.execute("DROP FUNCTION IF EXISTS trg_archive_fts()")
    op.execute(
        "DROP FUNCTION IF EXISTS mtaplugin_archive_doc(regconfig, text, text, json, text, text)"
    )
    op.execute("DROP FUNCTION IF EXISTS mtaplugin_ts_config(text)")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _pg_upgrade()
    else:
        _sqlite_upgrade()


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _pg_downgrade()
    else:
        _sqlite_downgrade()
