"""Roster pages of a big list: the REST API's ``count``/``page`` (Mailman's paging, in
member order) and the web UI's members page (address order).  A page in the second half is
read from the other end of the roster; these tests walk every page, with page sizes that do
and do not divide the roster, and check that each member is on exactly one page, in order,
with Mailman's ``start`` and ``total_size``.  On SQLite and PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.manage import lists, members
from tests.unit.test_api import Api, api, new_list  # noqa: F401  (a pytest fixture)
from tests.unit.webclient import Site, make_site

N = 23


@pytest.fixture
def roster(api: Api, module_sessions: sessionmaker[Session]) -> tuple[str, list[str]]:  # noqa: F811
    """A list and its members' addresses in the order they joined (not address order)."""
    assert api.post("domains", "mail_host=paging.test").status_code in (201, 400)
    list_id = new_list(api, "paging.test")
    emails = [f"z{(i * 7) % N:02d}-{i}@paging.example" for i in range(N)]
    with module_sessions.begin() as s:
        mlist = lists.get(s, list_id.replace(".paging.test", "@paging.test"))
        members.add_many(s, mlist, [(e, "") for e in emails])
    return list_id, emails


@pytest.mark.parametrize("count", [1, 2, 5, 7, 11, 12, 22, 23, 50])
def test_rest_pages_hold_every_member_once_in_member_order(
    api: Api,  # noqa: F811
    roster: tuple[str, list[str]],
    count: int,
) -> None:
    list_id, emails = roster
    whole = api.get(f"lists/{list_id}/roster/member").json
    assert [e["email"] for e in whole["entries"]] == emails
    seen: list[str] = []
    pages = -(-N // count)
    for page in range(1, pages + 2):
        got = api.get(f"lists/{list_id}/roster/member?count={count}&page={page}").json
        assert (got["start"], got["total_size"]) == ((page - 1) * count, N)
        entries = [e["email"] for e in got.get("entries", [])]
        expected = emails[(page - 1) * count : page * count]
        assert entries == expected, (page, count)
        seen.extend(entries)
    assert seen == emails


@pytest.fixture
def web(module_sessions: sessionmaker[Session], tmp_path: Path) -> Site:
    return make_site(module_sessions, tmp_path / "var")


def test_web_members_pages_hold_every_member_once_in_address_order(web: Site) -> None:
    n = 123  # 3 pages of 50: the second half is read from the other end
    emails = [f"p{(i * 37) % n:03d}@pages.example" for i in range(n)]
    with web.sessions.begin() as s:
        members.add_many(s, lists.get(s, web.address), [(e, "") for e in emails])
    client = web.client()
    client.login(f"owner@{web.host}")
    everyone = sorted([*emails, "anne@example.com", "bob@example.com"])
    seen: list[str] = []
    for page in (1, 2, 3):
        text = client.get(f"/lists/{web.list_id}/members", params={"page": str(page)}).text
        assert f"page {page} of 3" in text
        found = list(dict.fromkeys(re.findall(r"[\w.-]+@(?:pages\.example|example\.com)", text)))
        assert found == everyone[(page - 1) * 50 : page * 50], page
        seen.extend(found)
    assert seen == everyone
