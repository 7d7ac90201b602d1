"""One door per concept: the web's bans and header-match pages change a list through the
functions REST calls (mtaplugin.manage.bans, mtaplugin.manage.header_matches), so a
duplicate the one refuses the other refuses too, with the same words naming the field."""

from __future__ import annotations

import html

import pytest
from sqlalchemy import select

from mtaplugin.manage import lists
from mtaplugin.model import Ban, HeaderMatch
from tests.unit.test_api import Api, api  # noqa: F401  (a pytest fixture)
from tests.unit.webclient import Client, Site


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


@pytest.fixture
def owner(site: Site) -> Client:
    client = site.client()
    client.login(f"owner@{site.host}")
    return client


def test_the_web_refuses_a_duplicate_header_match_as_rest_does(
    site: Site,
    owner: Client,
    api: Api,  # noqa: F811
) -> None:
    path = f"lists/{site.list_id}/header-matches"
    assert api.post(path, "header=X-Spam&pattern=^yes").status_code == 201
    rest = api.post(path, "header=X-Spam&pattern=^yes")
    assert rest.status_code == 400
    problem = "This header match already exists"
    assert rest.json["description"] == f'Invalid Parameter "pattern": {problem}'
    web = owner.post(f"/{path}", {"header": "X-Spam:", "pattern": "^yes", "action": ""})
    assert web.status_code == 400
    assert f"pattern: {problem}" in html.unescape(web.text)
    assert len(site.rows(HeaderMatch)) == 1  # nothing was added
    # The other way round: a header match added on the web, then again over REST.
    added = owner.post(f"/{path}", {"header": "X-Other", "pattern": "x", "action": "discard"})
    assert added.status_code == 200
    again = api.post(path, "header=x-other&pattern=x")
    assert again.json["description"] == f'Invalid Parameter "pattern": {problem}'
    assert len(site.rows(HeaderMatch)) == 2


def test_the_web_refuses_a_duplicate_ban_as_rest_does(
    site: Site,
    owner: Client,
    api: Api,  # noqa: F811
) -> None:
    path = f"lists/{site.list_id}/bans"
    assert api.post(path, "email=Spam@Example.net").status_code == 201
    rest = api.post(path, "email=spam@example.net")
    assert rest.status_code == 400
    problem = rest.json["description"]
    assert problem == "Address is already banned"  # Mailman's words
    web = owner.post(f"/{path}", {"email": " SPAM@example.net "})
    assert web.status_code == 400
    assert f"email: {problem}" in html.unescape(web.text)
    assert len(site.rows(Ban)) == 1


def test_the_web_checks_a_header_match_as_rest_does(
    site: Site,
    owner: Client,
    api: Api,  # noqa: F811
) -> None:
    path = f"lists/{site.list_id}/header-matches"
    for header, pattern, field in (("X Spam", "x", "header"), ("X-Spam", " ", "pattern")):
        rest = api.post(path, f"header={header}&pattern={pattern}")
        assert rest.status_code == 400 and f'"{field}"' in rest.json["description"]
        web = owner.post(f"/{path}", {"header": header, "pattern": pattern, "action": ""})
        assert web.status_code == 400 and f"{field}: " in html.unescape(web.text)
    assert len(site.rows(HeaderMatch)) == 0


def test_removing_on_the_web_goes_through_manage(site: Site, owner: Client) -> None:
    path = f"/lists/{site.list_id}/header-matches"
    for pattern in ("a", "b", "c"):
        owner.post(path, {"header": "X-Spam", "pattern": pattern, "action": ""})
    with site.sessions() as s:
        first = s.scalar(select(HeaderMatch.id).where(HeaderMatch.pattern == "a"))
    assert owner.post(path, {"op": "remove", "match_id": str(first)}).status_code == 200
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        rows = s.scalars(
            select(HeaderMatch)
            .where(HeaderMatch.mailing_list_id == mlist.id)
            .order_by(HeaderMatch.position)
        )
        # renumbered as REST's delete renumbers: positions stay 0, 1, ...
        assert [(m.position, m.pattern) for m in rows] == [(0, "b"), (1, "c")]
    bans = f"/lists/{site.list_id}/bans"
    owner.post(bans, {"email": "^.*@spam\\.example$"})
    with site.sessions() as s:
        ban = s.scalar(select(Ban.id).where(Ban.email == "^.*@spam\\.example$"))
    assert owner.post(bans, {"op": "remove", "ban_id": str(ban)}).status_code == 200
    assert len(site.rows(Ban)) == 0


def test_rest_changes_a_header_match_through_manage(
    site: Site,
    api: Api,  # noqa: F811
) -> None:
    path = f"lists/{site.list_id}/header-matches"
    for pattern in ("a", "b"):
        assert api.post(path, f"header=X-Spam&pattern={pattern}").status_code == 201
    # Made the twin of another: refused as adding it would be, and nothing changed.
    twin = api.patch(f"{path}/1", "pattern=a&action=discard")
    assert twin.status_code == 400 and '"pattern"' in twin.json["description"]
    far = api.patch(f"{path}/1", "pattern=c&position=5")
    assert far.status_code == 400 and '"position"' in far.json["description"]
    found = api.get(path).json["entries"]
    assert [(m["pattern"], m.get("action")) for m in found] == [("a", None), ("b", None)]
    assert api.patch(f"{path}/1", "pattern=c&action=hold&position=0").status_code == 204
    found = api.get(path).json["entries"]
    assert [(m["position"], m["pattern"], m.get("action")) for m in found] == [
        (0, "c", "hold"),
        (1, "a", None),
    ]
