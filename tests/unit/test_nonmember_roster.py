"""A nonmember whose post a list refuses at SMTP, or holds, is on the list's nonmember
roster (as Mailman records them), and Postorius sees them over REST
(``/lists/{list}/roster/nonmember``).  A banned sender is not recorded."""

from __future__ import annotations

import pytest

from mtaplugin.engine import ListEngine
from mtaplugin.manage import bans, lists
from mtaplugin.posting.verdict import Reject
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import make_post
from tests.unit.sites import Roster, Site
from tests.unit.test_api import Api, api  # noqa: F401  (fixture)

STRANGER = "stranger@example.net"


@pytest.fixture
def site_roster() -> Roster:
    return Roster(strict=("anne@example.com",))


def nonmembers(api: Api, site: Site, name: str) -> list[str]:  # noqa: F811
    r = api.get(f"lists/{name}.{site.host}/roster/nonmember")
    assert r.status_code == 200, r.text
    return [entry["email"] for entry in r.json.get("entries", [])]


def post(engine: ListEngine, sender: str, *to: str) -> object:
    raw = make_post(sender, to[0], subject="hello")
    return engine.decide(Envelope(mail_from=sender, recipients=[f"<{t}>" for t in to]), raw)


def test_a_post_refused_at_smtp_records_the_nonmember(
    api: Api,  # noqa: F811
    site: Site,
    engine: ListEngine,
):
    assert nonmembers(api, site, "strict") == []
    verdict = post(engine, STRANGER, site.addr("strict"))
    assert isinstance(verdict, Reject)  # the 5xx: nothing else is stored
    assert nonmembers(api, site, "strict") == [STRANGER]
    assert isinstance(post(engine, STRANGER, site.addr("strict")), Reject)
    assert nonmembers(api, site, "strict") == [STRANGER]  # once


def test_a_held_post_records_the_nonmember(api: Api, site: Site, engine: ListEngine):  # noqa: F811
    verdict = post(engine, STRANGER, site.addr("team"))
    assert not isinstance(verdict, Reject) and len(site.held()) == 1
    assert nonmembers(api, site, "team") == [STRANGER]


def test_refused_by_one_list_and_held_by_another_records_on_both(
    api: Api,  # noqa: F811
    site: Site,
    engine: ListEngine,
):
    verdict = post(engine, STRANGER, site.addr("strict"), site.addr("team"))
    assert not isinstance(verdict, Reject)  # one list holds it: persisted as usual
    assert nonmembers(api, site, "strict") == [STRANGER]
    assert nonmembers(api, site, "team") == [STRANGER]


def test_a_banned_sender_refused_at_smtp_is_not_recorded(
    api: Api,  # noqa: F811
    site: Site,
    engine: ListEngine,
):
    with site.sessions.begin() as s:
        bans.add(s, lists.get(s, site.addr("strict")), STRANGER)
    assert isinstance(post(engine, STRANGER, site.addr("strict")), Reject)
    assert nonmembers(api, site, "strict") == []


def test_a_member_refused_is_not_a_nonmember(api: Api, site: Site, engine: ListEngine):  # noqa: F811
    site.update("strict", max_message_size=1)
    raw = make_post("anne@example.com", site.addr("strict"), body="x" * 4000)
    verdict = engine.decide(
        Envelope(mail_from="anne@example.com", recipients=[f"<{site.addr('strict')}>"]), raw
    )
    assert verdict is not None
    assert nonmembers(api, site, "strict") == []
