"""The web's people pages on SQLite and PostgreSQL: ``/account/export`` (a person's own
data) and ``/people`` (an address on every list the viewer administers), with the roles'
limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.enums import Action, MemberRole
from mtaplugin.manage import domains, lists, members, users
from mtaplugin.model import MailingList
from tests.helpers import unique
from tests.unit.webclient import PASSWORD, Site, make_site

pytestmark = pytest.mark.usefixtures("cheap_argon2")


@pytest.fixture
def site(module_sessions: sessionmaker[Session], tmp_path: Path) -> Site:
    """team, one and two owned by owner@HOST; elsewhere, a list in another domain that
    owner@HOST does not administer; zed is a member of all four."""
    site = make_site(module_sessions, tmp_path / "var")
    zed = f"{unique('zed')}@example.net"
    with site.sessions.begin() as s:
        for name in ("one", "two"):
            mlist = lists.create(s, site.addr(name))
            members.add(s, mlist, site.addr("owner"), MemberRole.owner)
        other = make_other(s)
        for name in ("team", "one", "two"):
            members.add(s, lists.get(s, site.addr(name)), zed)
        members.add(s, other, zed)
    site.zed = zed  # type: ignore[attr-defined]
    site.other = other.list_id  # type: ignore[attr-defined]
    return site


def make_other(s: Session) -> MailingList:
    host = f"{unique('else')}.test"
    domains.create(s, host)
    return lists.create(s, f"elsewhere@{host}")


def test_an_owner_finds_and_removes_an_address_on_all_their_lists(site: Site):
    zed = site.zed  # type: ignore[attr-defined]
    c = site.client()
    c.login(site.addr("owner"))
    assert "/people" in c.get("/").text
    page = c.get("/people", query_string=f"email={zed}")
    assert page.status_code == 200
    for name in ("team", "one", "two"):
        assert site.addr(name) in page.text
    assert "elsewhere@" not in page.text  # not theirs: not even shown
    ids = [f"{n}.{site.host}" for n in ("team", "one", "two")]
    page = c.post("/people", [("email", zed), ("action", "remove")] + [("lists", i) for i in ids])
    assert page.status_code == 200
    assert f"Removed {zed} from {site.addr('one')}." in page.text
    for name in ("team", "one", "two"):
        assert not site.is_member(zed, name)
    with site.sessions() as s:
        other = lists.get(s, site.other)  # type: ignore[attr-defined]
        assert members.is_member(s, other, zed)
    # the goodbye of each list (added by hand, they had no welcome)
    assert len(site.mails_to(zed)) == 3


def test_an_owner_cannot_touch_another_owners_list(site: Site):
    zed = site.zed  # type: ignore[attr-defined]
    c = site.client()
    c.login(site.addr("owner"))
    page = c.post(
        "/people",
        [
            ("email", zed),
            ("action", "remove"),
            ("lists", site.list_id),
            ("lists", site.other),  # type: ignore[attr-defined]
        ],
    )
    assert page.status_code == 400
    assert "no list you administer" in page.text
    assert site.is_member(zed, "team")  # nothing changed, not even on their own list


def test_moderate_and_ban_from_the_page(site: Site):
    zed = site.zed  # type: ignore[attr-defined]
    c = site.client()
    c.login(site.addr("owner"))
    ids = [f"{n}.{site.host}" for n in ("team", "one")]
    form = [("email", zed), ("action", "moderate"), ("moderation_action", "discard")]
    c.post("/people", form + [("lists", i) for i in ids])
    with site.sessions() as s:
        for name, want in (("team", Action.discard), ("one", Action.discard), ("two", None)):
            m = members.get(s, lists.get(s, site.addr(name)), zed, MemberRole.member)
            assert m.moderation_action is want
    page = c.post("/people", [("email", zed), ("action", "ban"), ("lists", ids[0])])
    assert f"Banned {zed} from {site.address}." in page.text
    page = c.post("/people", [("email", zed), ("action", "remove")])
    assert page.status_code == 400 and "tick at least one list" in page.text


def test_the_page_is_for_owners(site: Site):
    c = site.client()
    c.login(site.addr("mod"))
    assert "/people" not in c.get("/").text
    assert c.get("/people").status_code == 403
    assert site.client().get("/people").status_code == 303  # log in first


def test_a_person_exports_their_own_data(site: Site):
    zed = site.zed  # type: ignore[attr-defined]
    with site.sessions.begin() as s:
        users.add_user(s, zed, PASSWORD)
    c = site.client()
    assert c.get("/account/export").status_code == 303  # log in first
    c.login(zed)
    r = c.get("/account/export")
    assert r.status_code == 200
    assert r.headers["content-disposition"] == 'attachment; filename="my-data.json"'
    doc = json.loads(c.get("/account/export.json").text)
    assert doc["email"] == zed
    assert len([m for m in doc["memberships"] if m["role"] == "member"]) == 4
    assert all(m["email"] == zed for m in doc["memberships"])
