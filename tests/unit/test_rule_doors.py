"""One door per concept: the web's bans and header-match pages change a list through the
functions REST calls (mtaplugin.manage.bans, mtaplugin.manage.header_matches), so a
duplicate the one refuses the other refuses too, with the same words naming the field."""

from __future__ import annotations

import html
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine, select

from mtaplugin.manage import lists
from mtaplugin.model import Ban, HeaderMatch
from tests.unit.test_api import Api, api_for
from tests.unit.webclient import Client, Site


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


@pytest.fixture
def owner(site: Site) -> Client:
    return site.owner()


@pytest.fixture
def rest(module_db_url: str, module_engine: Engine) -> Api:
    return api_for(module_db_url, module_engine)


@dataclass
class Doors:
    """The two doors to one list: the web (its owner, logged in) and REST (the admin)."""

    site: Site
    web: Client
    rest: Api

    def path(self, what: str) -> str:
        return f"lists/{self.site.list_id}/{what}"

    def refused_over_rest(self, what: str, body: str) -> str:
        """The description of the 400 that REST answers to adding ``body`` to ``what``."""
        refused = self.rest.post(self.path(what), body)
        assert refused.status_code == 400
        description: str = refused.json["description"]
        return description

    def refused_on_the_web(self, what: str, form: dict[str, object]) -> str:
        """The text of the 400 page that the web answers to posting ``form`` to ``what``."""
        page = self.web.post(f"/{self.path(what)}", form)
        assert page.status_code == 400
        return html.unescape(page.text)


@pytest.fixture
def doors(site: Site, owner: Client, rest: Api) -> Doors:
    return Doors(site, owner, rest)


def test_the_web_refuses_a_duplicate_header_match_as_rest_does(doors: Doors) -> None:
    path = doors.path("header-matches")
    assert doors.rest.post(path, "header=X-Spam&pattern=^yes").status_code == 201
    problem = "This header match already exists"
    said = doors.refused_over_rest("header-matches", "header=X-Spam&pattern=^yes")
    assert said == f'Invalid Parameter "pattern": {problem}'
    form = {"header": "X-Spam:", "pattern": "^yes", "action": ""}
    assert f"pattern: {problem}" in doors.refused_on_the_web("header-matches", form)
    assert len(doors.site.rows(HeaderMatch)) == 1  # nothing was added
    # The other way round: a header match added on the web, then again over REST.
    added = doors.web.post(f"/{path}", {"header": "X-Other", "pattern": "x", "action": "discard"})
    assert added.status_code == 200
    again = doors.refused_over_rest("header-matches", "header=x-other&pattern=x")
    assert again == f'Invalid Parameter "pattern": {problem}'
    assert len(doors.site.rows(HeaderMatch)) == 2


def test_the_web_refuses_a_duplicate_ban_as_rest_does(doors: Doors) -> None:
    assert doors.rest.post(doors.path("bans"), "email=Spam@Example.net").status_code == 201
    problem = doors.refused_over_rest("bans", "email=spam@example.net")
    assert problem == "Address is already banned"  # Mailman's words
    assert f"email: {problem}" in doors.refused_on_the_web("bans", {"email": " SPAM@example.net "})
    assert len(doors.site.rows(Ban)) == 1


def test_the_web_checks_a_header_match_as_rest_does(doors: Doors) -> None:
    for header, pattern, field in (("X Spam", "x", "header"), ("X-Spam", " ", "pattern")):
        said = doors.refused_over_rest("header-matches", f"header={header}&pattern={pattern}")
        assert f'"{field}"' in said
        form = {"header": header, "pattern": pattern, "action": ""}
        assert f"{field}: " in doors.refused_on_the_web("header-matches", form)
    assert len(doors.site.rows(HeaderMatch)) == 0


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


def test_rest_changes_a_header_match_through_manage(site: Site, rest: Api) -> None:
    path = f"lists/{site.list_id}/header-matches"
    for pattern in ("a", "b"):
        assert rest.post(path, f"header=X-Spam&pattern={pattern}").status_code == 201
    # Made the twin of another: refused as adding it would be, and nothing changed.
    twin = rest.patch(f"{path}/1", "pattern=a&action=discard")
    assert twin.status_code == 400 and '"pattern"' in twin.json["description"]
    far = rest.patch(f"{path}/1", "pattern=c&position=5")
    assert far.status_code == 400 and '"position"' in far.json["description"]
    found = rest.get(path).json["entries"]
    assert [(m["pattern"], m.get("action")) for m in found] == [("a", None), ("b", None)]
    assert rest.patch(f"{path}/1", "pattern=c&action=hold&position=0").status_code == 204
    found = rest.get(path).json["entries"]
    assert [(m["position"], m["pattern"], m.get("action")) for m in found] == [
        (0, "c", "hold"),
        (1, "a", None),
    ]
