"""``/3.1/people/...`` in-process on SQLite and PostgreSQL: the site admin's export and
forget, and an address across every list the caller administers, with the roles' limits
(an owner neither sees nor touches lists they do not administer)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, select

from mtaplugin.config import SiteSettings
from mtaplugin.manage import bans, lists
from mtaplugin.manage.people.forget import pseudonym
from mtaplugin.model import AuditEntry, OutboxMessage
from tests.helpers import unique
from tests.unit.test_api import Api, api_for, new_domain, new_list

SECRET = "api-people-secret-0123456789abcdef0123456789"


@pytest.fixture
def api(module_db_url: str, module_engine: Engine) -> Api:
    return api_for(module_db_url, module_engine, site=SiteSettings(secret_key=SECRET))


@pytest.fixture
def host(api: Api) -> str:
    return new_domain(api, "ppl")


def _join(api: Api, list_id: str, email: str, role: str = "member") -> None:
    body = f"list_id={list_id}&subscriber={email}&role={role}" + "".join(
        f"&pre_{what}=true" for what in ("verified", "confirmed", "approved")
    )
    r = api.post("members", body)
    assert r.status_code == 201, r.text


def _user(api: Api, email: str, password: str) -> Api:
    assert api.post("users", f"email={email}&password={password}").status_code == 201
    return api.as_user(email, password)


def test_export_is_for_the_site_admin(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    email = f"{unique('p')}@example.net"
    _join(api, list_id, email)
    r = api.get(f"people/{email}")
    assert r.status_code == 200, r.text
    assert [m["list"] for m in r.json["memberships"]] == [f"{list_id.split('.')[0]}@{host}"]
    assert r.json["format"] == "mtaplugin-person/1"
    r = api.get(f"people/{unique('nobody')}@example.net")
    assert r.status_code == 404 and "holds nothing" in r.json["description"]
    owner = _user(api, f"{unique('o')}@example.net", "pw")
    assert owner.get(f"people/{email}").status_code == 403


def test_forget_over_rest(api: Api, host: str, module_sessions: Any) -> None:
    list_id = new_list(api, host)
    email = f"{unique('gone')}@example.net"
    _join(api, list_id, email)
    r = api.get(f"people/{email}/forget?archive=remove")
    assert r.status_code == 200
    assert r.json["would_remove"]["memberships"] == 1
    assert api.get(f"lists/{list_id}/roster/member").json["total_size"] == 1  # unchanged
    assert api.post(f"people/{email}/forget", "archive=shred").status_code == 400
    r = api.post(f"people/{email}/forget", "archive=anonymise")
    assert r.status_code == 200, r.text
    assert r.json["removed"]["memberships"] == 1
    assert api.get(f"lists/{list_id}/roster/member").json["total_size"] == 0
    assert api.get(f"people/{email}").status_code == 404
    with module_sessions() as s:
        last = s.scalars(select(AuditEntry).order_by(AuditEntry.id.desc())).first()
        assert last.action == "person.forget" and last.actor == "rest:restadmin"
        assert last.detail["person"] == [pseudonym(SECRET.encode(), email)]


def test_an_owner_acts_only_on_the_lists_they_own(
    api: Api, host: str, module_sessions: Any
) -> None:
    mine = [new_list(api, host) for _ in range(3)]
    theirs = new_list(api, host)
    owner_email = f"{unique('owner')}@example.net"
    owner = _user(api, owner_email, "pw")
    for list_id in mine:
        _join(api, list_id, owner_email, "owner")
    target = f"{unique('zed')}@example.net"
    for list_id in [*mine, theirs]:
        _join(api, list_id, target)
    r = owner.get(f"people/{target}/lists")
    assert r.status_code == 200
    assert sorted(e["list_id"] for e in r.json["entries"]) == sorted(mine)
    # naming a list they do not own is answered as if it did not exist
    r = owner.post(f"people/{target}/lists", f"action=remove&lists={theirs}")
    assert r.status_code == 404
    r = owner.post(f"people/{target}/lists", "action=remove")
    assert r.status_code == 200, r.text
    assert sorted(e["list"].split("@")[0] for e in r.json["entries"] if e["changed"]) == sorted(
        m.split(".")[0] for m in mine
    )
    for list_id in mine:
        assert api.get(f"lists/{list_id}/roster/member").json["total_size"] == 0
    assert api.get(f"lists/{theirs}/roster/member").json["total_size"] == 1
    with module_sessions() as s:
        audit = s.scalars(
            select(AuditEntry).where(
                AuditEntry.action == "member.unsubscribe", AuditEntry.actor == f"rest:{owner_email}"
            )
        ).all()
        assert len(audit) == 3
        assert sum(target in m.recipients for m in s.scalars(select(OutboxMessage))) >= 3
    # ban and moderate everywhere they administer, not beyond
    r = owner.post(f"people/{target}/lists", "action=ban")
    assert r.status_code == 200 and len(r.json["entries"]) == 3
    with module_sessions() as s:
        assert bans.is_banned(s, lists.get(s, mine[0]), target)
        assert not bans.is_banned(s, lists.get(s, theirs), target)
    r = owner.post(f"people/{target}/lists", "action=moderate&moderation_action=sometimes")
    assert r.status_code == 400 and "moderation_action" in r.json["description"]
    assert owner.post(f"people/{target}/lists", "action=explode").status_code == 400
    # the site admin sees the last list too; a stranger administers nothing
    assert [e["list_id"] for e in api.get(f"people/{target}/lists").json["entries"]] != []
    stranger = _user(api, f"{unique('s')}@example.net", "pw")
    assert stranger.get(f"people/{target}/lists").json["entries"] == []
    assert stranger.post(f"people/{target}/lists", "action=remove").status_code == 403


def test_moderate_across_lists(api: Api, host: str) -> None:
    a, b = new_list(api, host), new_list(api, host)
    target = f"{unique('m')}@example.net"
    _join(api, a, target)
    _join(api, b, target)
    r = api.post(f"people/{target}/lists", "action=moderate&moderation_action=hold")
    assert r.status_code == 200
    found = api.get(f"people/{target}/lists").json["entries"]
    assert {e["moderation_action"] for e in found} == {"hold"}


def test_a_domain_owner_acts_on_the_lists_of_their_domain(api: Api, host: str) -> None:
    other_host = f"{unique('ppl')}.test"
    assert api.post("domains", f"mail_host={other_host}").status_code == 201
    ours = [new_list(api, host), new_list(api, host)]
    elsewhere = new_list(api, other_host)
    target = f"{unique('t')}@example.net"
    for list_id in [*ours, elsewhere]:
        _join(api, list_id, target)
    email = f"{unique('dom')}@example.net"
    boss = _user(api, email, "pw")
    assert api.post(f"domains/{host}/owners", f"owner={email}").status_code == 204
    found = boss.get(f"people/{target}/lists").json["entries"]
    assert sorted(e["list_id"] for e in found) == sorted(ours)
    r = boss.post(f"people/{target}/lists", "action=moderate&moderation_action=reject")
    assert r.status_code == 200 and len(r.json["entries"]) == 2
    everywhere = api.get(f"people/{target}/lists").json["entries"]
    actions = {e["list_id"]: e["moderation_action"] for e in everywhere}
    assert actions == {ours[0]: "reject", ours[1]: "reject", elsewhere: None}
