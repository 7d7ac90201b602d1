"""mtaplugin.frontends.postfix_tables: the list-domain tables Postfix reads while mtaplugin
is down, built with the real ``postmap`` and read back with ``postmap -q``."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from mtaplugin import config, wiring
from mtaplugin.db import sessionmaker_for
from mtaplugin.frontends import postfix_tables
from mtaplugin.frontends.postfix_tables import TableError, render, update, write_table
from mtaplugin.manage import domains
from mtaplugin.manage.alias_domains import AliasRules

#: the site admin, who may set an alias domain
ADMIN = AliasRules(site_admin=True)

pytestmark = pytest.mark.skipif(shutil.which("postmap") is None, reason="needs postmap")


@pytest.fixture
def mail_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Postfix configuration directory for postmap (it reads main.cf)."""
    conf = tmp_path / "postfix-conf"
    conf.mkdir()
    (conf / "main.cf").write_text("")
    monkeypatch.setenv("MAIL_CONFIG", str(conf))
    return conf


def query(path: Path, key: str) -> str | None:
    proc = subprocess.run(
        ["postmap", "-q", key, f"hash:{path}"], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def test_render_is_sorted_lower_case_and_without_duplicates():
    text = render(["B.test.", "a.test", "b.test", " "], "mtaplugin_list_mail")
    assert text.splitlines()[1:] == ["a.test mtaplugin_list_mail", "b.test mtaplugin_list_mail"]
    assert text.startswith("#")


def test_write_table_builds_the_database_once(tmp_path: Path, mail_config: Path):
    path = tmp_path / "tables" / "domains"
    assert write_table(path, render(["lists.test"], "x_class"), "hash")
    assert query(path, "lists.test") == "x_class"
    assert query(path, "other.test") is None
    assert path.stat().st_mode & 0o777 == 0o644
    # unchanged: nothing rewritten
    assert not write_table(path, render(["lists.test"], "x_class"), "hash")
    assert write_table(path, render(["new.test"], "x_class"), "hash")
    assert query(path, "new.test") == "x_class" and query(path, "lists.test") is None


def test_a_failing_postmap_is_an_error_and_retried(tmp_path: Path, mail_config: Path):
    path = tmp_path / "domains"
    with pytest.raises(TableError, match="no-such-type"):
        write_table(path, render(["lists.test"], "x"), "no-such-type")
    # the source was written, but the database was not: the next round builds it
    assert write_table(path, render(["lists.test"], "x"), "hash")


def test_update_follows_the_list_database(tmp_path: Path, sqlite_url: str, mail_config: Path):
    tables = tmp_path / "tables"
    settings = config.load(
        environ={
            "MTAPLUGIN_DATABASE_URL": sqlite_url,
            "MTAPLUGIN_DATABASE_TIMEOUT": "0.2",
            "MTAPLUGIN_LOOKUP_TABLES_DIR": str(tables),
        }
    )
    world = wiring.build(settings)
    with sessionmaker_for(world.db).begin() as s:
        domains.create(s, "lists.example.org")
    assert update(world)
    assert query(tables / "domains", "lists.example.org") == "mtaplugin_list_mail"
    assert query(tables / "transport", "lists.example.org") == "lmtp:unix:mtaplugin/lmtp.sock"
    assert not update(world)
    # a domain's alias domain (Mailman's alias_domain) takes list mail too
    with sessionmaker_for(world.db).begin() as s:
        domains.update(
            s, domains.get(s, "lists.example.org"), alias_domain="alias.example.org", rules=ADMIN
        )
    assert update(world)
    assert query(tables / "domains", "alias.example.org") == "mtaplugin_list_mail"
    assert query(tables / "transport", "alias.example.org") == "lmtp:unix:mtaplugin/lmtp.sock"

    # The database cannot answer: the tables keep what they said.
    conn = sqlite3.connect(sqlite_url.split("///", 1)[1], isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        stop = postfix_tables.threading.Event()
        stop.set()
        postfix_tables.keep_tables(world, stop)  # logs, does not raise
    finally:
        conn.execute("ROLLBACK")
    assert query(tables / "domains", "lists.example.org") == "mtaplugin_list_mail"
