"""``/lists/{list}/roster-sources``: the site administrator sets a source (its password
write-only), an owner reads it and asks for a sync, but may not change it; bad values are
refused naming their field.  The directory is a second real PostgreSQL database."""

from __future__ import annotations

import itertools
from urllib.parse import urlencode

import pytest

from mtaplugin.testing.postgres import PostgresServer
from tests.helpers import unique
from tests.unit.test_api import Api, api, host, new_list  # noqa: F401  (fixtures)

_n = itertools.count(1)
PASSWORD = "rest-people-pw"


@pytest.fixture
def people_url(postgres: PostgresServer) -> str:
    dbname = f"api_people_{next(_n)}"
    postgres.execute(f"CREATE DATABASE {dbname}")
    postgres.execute(
        "CREATE TABLE people (email text); "
        "INSERT INTO people VALUES ('ann@example.net'), ('ben@example.net')",
        dbname,
    )
    return f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:{postgres.port}/{dbname}"


def test_the_admin_sets_a_source_and_an_owner_syncs_it(
    api: Api,  # noqa: F811
    host: str,  # noqa: F811
    people_url: str,
) -> None:
    list_id = new_list(api, host)
    path = f"lists/{list_id}/roster-sources/member"
    assert api.get(path).status_code == 404
    body = urlencode(
        {"kind": "sql", "url": people_url, "query": "SELECT email FROM people", "max_removals": 3}
    )
    r = api.call("PUT", path, body)
    assert r.status_code == 200, r.text
    assert r.json["bind_password_set"] is True and PASSWORD not in r.text
    assert r.json["max_removals"] == 3 and r.json["last_result"] == ""
    listed = api.get(f"lists/{list_id}/roster-sources").json
    assert listed["total_size"] == 1 and PASSWORD not in str(listed)

    owner = f"{unique('own')}@example.net"
    assert api.post("users", f"email={owner}&password=pw").status_code == 201
    r = api.post("members", f"list_id={list_id}&subscriber={owner}&role=owner")
    assert r.status_code == 201
    me = api.as_user(owner, "pw")
    assert me.get(path).json["kind"] == "sql"
    assert me.patch(path, "max_removals=1000").status_code == 403

    dry = me.post(f"{path}/sync", "dry_run=true")
    assert dry.status_code == 200, dry.text
    assert dry.json["added"] == ["ann@example.net", "ben@example.net"]
    assert api.get(f"lists/{list_id}/roster/member").json["total_size"] == 0
    done = me.post(f"{path}/sync")
    assert done.json["result"] == "ok" and len(done.json["added"]) == 2
    assert api.get(f"lists/{list_id}/roster/member").json["total_size"] == 2
    shown = api.get(path).json
    assert shown["last_result"] == "ok" and shown["last_added"] == 2 and shown["last_sync_at"]

    leak = api.patch(path, urlencode({"url": f"nonsense{PASSWORD}://x:{PASSWORD}@h:port/db"}))
    assert leak.status_code == 400 and "url" in leak.text and PASSWORD not in leak.text
    bad = api.patch(path, "max_removal_percent=200")
    assert bad.status_code == 400 and "max_removal_percent" in bad.text
    assert api.get(path).json["max_removal_percent"] == 10
    assert api.delete(path).status_code == 204
    assert api.get(f"lists/{list_id}/roster/member").json["total_size"] == 2


def test_a_new_source_needs_its_kind(api: Api, host: str) -> None:  # noqa: F811
    list_id = new_list(api, host)
    r = api.call("PUT", f"lists/{list_id}/roster-sources/member", "url=ldap://127.0.0.1")
    assert r.status_code == 400 and "kind" in r.text
    r = api.call("PUT", f"lists/{list_id}/roster-sources/nobody", "kind=sql")
    assert r.status_code == 400 and "role" in r.text
