"""``@list`` entries in the four nonmember settings: a sender who is a member of the list
named is matched, looked up when the post is decided (issue 31), through the engine.

Mailman 3 writes ``@list@domain``, Mailman 2.1 ``@list`` (the same domain); both match."""

from __future__ import annotations

import pytest

from mtaplugin.engine import ListEngine
from mtaplugin.enums import Action, MemberRole
from mtaplugin.manage import lists, members
from mtaplugin.posting import atlists
from mtaplugin.posting.verdict import Accept, Accepted, Discard, Dropped, Held, Refused, Reject
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import make_post
from tests.unit.sites import Site
from tests.unit.test_api import Api, api, host, new_list  # noqa: F401  (fixtures)


def send(engine: ListEngine, site: Site, sender: str) -> object:
    """The outcome of ``sender``'s post to ``team``."""
    raw = make_post(sender, site.addr("team"))
    verdict = engine.decide(
        Envelope(mail_from=sender, recipients=[f"<{site.addr('team')}>"], queue_id="Q1"), raw
    )
    assert isinstance(verdict, Accept | Discard | Reject), verdict
    (outcome,) = verdict.outcomes
    return outcome


def configure(site: Site, setting: str, entry: str, default: Action) -> None:
    """``team`` names ``friends`` in ``setting``; ``friends`` has carol as a member and
    dora as a nonmember (who must not count)."""
    with site.sessions.begin() as s:
        team = lists.get(s, site.addr("team"))
        setattr(team, setting, [entry])
        team.default_nonmember_action = default
        friends = lists.create(s, site.addr("friends"))
        members.add(s, friends, "carol@example.net")
        members.add(s, friends, "dora@example.net", MemberRole.nonmember)


@pytest.mark.parametrize(
    ("setting", "decision"),
    [
        ("accept_these_nonmembers", Accepted),
        ("hold_these_nonmembers", Held),
        ("reject_these_nonmembers", Refused),
        ("discard_these_nonmembers", Dropped),
    ],
)
@pytest.mark.parametrize("form", ["@friends@{host}", "@friends", "@Friends@{HOST}"])
def test_a_member_of_the_named_list_matches(
    engine: ListEngine, site: Site, setting: str, decision: type, form: str
) -> None:
    default = Action.hold if decision is Accepted else Action.accept
    entry = form.format(host=site.host, HOST=site.host.upper())
    configure(site, setting, entry, default)
    assert isinstance(send(engine, site, "carol@example.net"), decision)
    # A nonmember of the named list, and a stranger, get the list's default.
    other = Held if decision is Accepted else Accepted
    assert isinstance(send(engine, site, "dora@example.net"), other)
    assert isinstance(send(engine, site, "eve@example.net"), other)


def test_the_named_lists_roster_is_read_at_decision_time(engine: ListEngine, site: Site) -> None:
    """The named list's snapshot is cached: a change to its roster reloads it, so a new
    member is accepted and a departed one held at once."""
    configure(site, "accept_these_nonmembers", f"@friends@{site.host}", Action.hold)
    # (The first post's count moves team's own generation once: team reloads once.)
    for _ in range(2):
        assert isinstance(send(engine, site, "carol@example.net"), Accepted)
    loads = engine.snapshots.loads
    assert isinstance(send(engine, site, "carol@example.net"), Accepted)
    assert engine.snapshots.loads == loads  # both snapshots came from the cache
    with site.sessions.begin() as s:
        friends = lists.get(s, site.addr("friends"))
        members.add(s, friends, "frank@example.net")
        members.remove(s, friends, "carol@example.net", MemberRole.member)
    assert isinstance(send(engine, site, "frank@example.net"), Accepted)
    assert isinstance(send(engine, site, "carol@example.net"), Held)


def test_an_entry_naming_the_list_itself_or_no_list_matches_nothing(
    engine: ListEngine, site: Site
) -> None:
    with site.sessions.begin() as s:
        team = lists.get(s, site.addr("team"))
        team.accept_these_nonmembers = [f"@team@{site.host}", "@nosuch@elsewhere.test"]
        team.default_nonmember_action = Action.hold
    assert isinstance(send(engine, site, "eve@example.net"), Held)
    assert isinstance(send(engine, site, "anne@example.com"), Accepted)


def test_target_reads_both_forms() -> None:
    assert atlists.target("@Dev@Example.COM", "x.test") == "dev@example.com"
    assert atlists.target(" @dev ", "Lists.Test") == "dev@lists.test"
    assert atlists.target("dev@example.com", "x.test") is None
    assert atlists.target("@", "x.test") is None


def test_rest_takes_an_at_list_entry_as_mailman_does_and_names_the_field_of_a_bad_one(
    api: Api,  # noqa: F811
    host: str,  # noqa: F811
) -> None:
    """What Postorius's form sends (``@list@domain``, one line per entry) is taken in each
    of the four settings, lower-cased; a ``@`` that names no list address is refused with
    400 naming the field, and nothing changes."""
    list_id = new_list(api, host)
    for setting in atlists.NONMEMBER_SETTINGS:
        body = f"{setting}=%40Friends%40{host}&{setting}=%5E.*%40partner%5C.example%24"
        r = api.patch(f"lists/{list_id}/config", body)
        assert r.status_code == 204, r.text
        got = api.get(f"lists/{list_id}/config/{setting}").json[setting]
        assert got == [f"@friends@{host}", "^.*@partner\\.example$"]
    r = api.patch(f"lists/{list_id}/config", "hold_these_nonmembers=%40not+a+list")
    assert r.status_code == 400
    assert "hold_these_nonmembers" in r.json["description"]
    assert "@list@domain" in r.json["description"]
    got = api.get(f"lists/{list_id}/config/hold_these_nonmembers").json
    assert got["hold_these_nonmembers"] == [f"@friends@{host}", "^.*@partner\\.example$"]
    # The other address settings take no @list entry.
    r = api.patch(f"lists/{list_id}/config", f"acceptable_aliases=%40friends%40{host}")
    assert r.status_code == 400 and "acceptable_aliases" in r.json["description"]


def test_an_entry_in_the_alias_domain_names_the_list_of_the_real_domain(
    engine: ListEngine, site: Site
) -> None:
    """``@friends@ALIAS``: the domain's alias domain names the same lists (Mailman's
    ``alias_domain``), so a member of friends@<domain> matches."""
    from mtaplugin.model import Domain

    alias = f"alias.{site.host}"
    with site.sessions.begin() as s:
        s.query(Domain).filter(Domain.mail_host == site.host).one().alias_domain = alias
    configure(site, "accept_these_nonmembers", f"@friends@{alias}", Action.hold)
    assert isinstance(send(engine, site, "carol@example.net"), Accepted)
    assert isinstance(send(engine, site, "eve@example.net"), Held)
