"""The web: an owner sets the list's topics, a member chooses among them on "My lists"."""

from __future__ import annotations

import pytest

from mtaplugin.enums import MemberRole
from mtaplugin.manage import lists, members, users
from tests.unit.webclient import PASSWORD, Site

pytestmark = pytest.mark.usefixtures("cheap_argon2")


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


def test_owner_sets_topics_and_bad_input_names_the_field(site: Site):
    client = site.client()
    client.login(f"owner@{site.host}")
    page = client.get(f"/lists/{site.list_id}/settings/topics")
    assert page.status_code == 200 and "topics_enabled" in page.text
    assert "not active yet" not in page.text
    bad = client.post(
        f"/lists/{site.list_id}/settings/topics",
        {"topics_enabled": "1", "topics_bodylines_limit": "5", "topics": "release | x | ("},
    )
    assert bad.status_code == 400 and "topics: bad regular expression" in bad.text
    with site.sessions() as s:
        assert not lists.get(s, site.address).topics_enabled
    good = client.post(
        f"/lists/{site.list_id}/settings/topics",
        {
            "topics_enabled": "1",
            "topics_bodylines_limit": "3",
            "topics": "release | new versions | release|rc[0-9]\nsocial | | dinner",
        },
    )
    assert good.status_code in (200, 303), good.text
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        assert mlist.topics_enabled and mlist.topics_bodylines_limit == 3
        assert mlist.topics == [
            ["release", "release|rc[0-9]", "new versions"],
            ["social", "dinner", ""],
        ]
    shown = client.get(f"/lists/{site.list_id}/settings/topics").text
    assert "release | new versions | release|rc[0-9]" in shown


def test_a_member_chooses_topics_on_my_lists(site: Site):
    site_topics = [["release", "release", "new versions"], ["social", "dinner", ""]]
    with site.sessions.begin() as s:
        users.add_user(s, "anne@example.com", PASSWORD)
        mlist = lists.get(s, site.address)
        mlist.topics_enabled = True
        mlist.topics = site_topics
        member_id = members.get(s, mlist, "anne@example.com", MemberRole.member).member_id
    client = site.client()
    client.login("anne@example.com")
    page = client.get("/my").text
    assert "release: new versions" in page
    saved = client.post(
        "/my",
        [
            ("member_id", member_id),
            ("topics_form", "1"),
            ("topics", "release"),
            ("nonmatching", "1"),
        ],
    )
    assert saved.status_code == 200 and "Saved your topics" in saved.text
    with site.sessions() as s:
        member = members.get(s, lists.get(s, site.address), "anne@example.com", MemberRole.member)
        assert member.topics == ["release"] and member.receive_nonmatching_topics
    bad = client.post("/my", [("member_id", member_id), ("topics_form", "1"), ("topics", "x")])
    assert bad.status_code == 400 and "topics: no such topic" in bad.text
    with site.sessions() as s:
        member = members.get(s, lists.get(s, site.address), "anne@example.com", MemberRole.member)
        assert member.topics == ["release"]
