"""The web's roster sources page: the site administrator adds an SQL source (a second
real PostgreSQL database), an owner sees it on the Members page and syncs it (a dry run
first), but may not change it; a bad value names its field and stores nothing."""

from __future__ import annotations

import itertools

import pytest

from mtaplugin.enums import MemberRole
from mtaplugin.manage import lists, users
from mtaplugin.roster_sources import sources
from mtaplugin.testing.postgres import PostgresServer
from tests.unit.webclient import PASSWORD, Site

_n = itertools.count(1)
SECRET = "web-people-pw"


pytestmark = pytest.mark.usefixtures("cheap_argon2")


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


@pytest.fixture
def people_url(postgres: PostgresServer) -> str:
    dbname = f"web_people_{next(_n)}"
    postgres.execute(f"CREATE DATABASE {dbname}")
    postgres.execute(
        "CREATE TABLE people (email text); INSERT INTO people VALUES ('zed@example.net')",
        dbname,
    )
    return f"postgresql+psycopg://postgres:{SECRET}@127.0.0.1:{postgres.port}/{dbname}"


def test_admin_sets_a_source_and_an_owner_syncs_it(site: Site, people_url: str) -> None:
    boss = f"boss@{site.host}"
    with site.sessions.begin() as s:
        users.add_user(s, boss, PASSWORD).is_server_owner = True
    page = f"/lists/{site.list_id}/roster-sources"
    admin = site.client()
    admin.login(boss)
    bad = admin.post(page, {"op": "save", "role": "member", "kind": "sql", "url": people_url,
                            "query": "SELECT email FROM people", "timeout": "lots"})  # fmt: skip
    assert bad.status_code == 400 and "timeout" in bad.text
    with site.sessions() as s:
        assert sources.for_list(s, lists.get(s, site.address)) == []
    saved = admin.post(page, {"op": "save", "role": "member", "kind": "sql", "url": people_url,
                              "query": "SELECT email FROM people", "enabled": "1"})  # fmt: skip
    assert saved.status_code == 200 and "Saved the roster source" in saved.text
    assert SECRET not in saved.text

    owner = site.client()
    owner.login(f"owner@{site.host}")
    shown = owner.get(page).text
    assert "SELECT email FROM people" in shown and SECRET not in shown and "never" in shown
    refused = owner.post(page, {"op": "save", "role": "member", "kind": "sql", "url": "sqlite://",
                                "query": "SELECT 1"})  # fmt: skip
    assert refused.status_code == 403
    dry = owner.post(page, {"op": "sync", "role": "member", "dry_run": "1"})
    assert dry.status_code == 200 and "zed@example.net" in dry.text and "dry run" in dry.text
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        assert sources.get(s, mlist, MemberRole.member).last_sync_at is None
    done = owner.post(page, {"op": "sync", "role": "member"})
    assert "1 added, 0 removed" in done.text
    members_page = owner.get(f"/lists/{site.list_id}/members").text
    assert "zed@example.net" in members_page and 'id="roster-source"' in members_page
