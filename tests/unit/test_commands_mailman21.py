"""Mailman 2.1's email commands that a moved site's members still send: ``info``,
``lists``, ``password``, ``options`` (``set show``) and ``remove`` (``unsubscribe``),
decided by the real engine on the module's database."""

from __future__ import annotations

from sqlalchemy import select

from mtaplugin.engine import ListEngine
from mtaplugin.manage import lists
from mtaplugin.model import Domain
from tests.helpers import confirm_token as token_in
from tests.helpers import plain_text as body
from tests.unit.sites import Site
from tests.unit.test_commands import engine, send, site_roster  # noqa: F401 (fixtures)


def _reply(site: Site, to: str) -> str:
    return body(site.mails_to(to)[-1])


def test_info_tells_what_the_list_is_and_where_to_read_more(
    engine: ListEngine,  # noqa: F811
    site: Site,
) -> None:
    site.update(display_name="Team", description="The team's list", info="Be kind.")
    with site.sessions.begin() as s:
        domain = s.scalar(select(Domain).where(Domain.mail_host == site.host))
        assert domain is not None
        domain.base_url = "https://lists.example/"
    send(engine, "zed@example.net", site.addr("team-request"), subject="info")
    reply = _reply(site, "zed@example.net")
    assert "Team <" + site.address + ">" in reply
    assert "The team's list" in reply and "Be kind." in reply
    assert site.addr("team-request") in reply
    assert f"https://lists.example/lists/{site.list_id}/" in reply


def test_lists_names_the_advertised_lists_of_the_domain_only(
    engine: ListEngine,  # noqa: F811
    site: Site,
) -> None:
    with site.sessions.begin() as s:
        lists.create(s, site.addr("open")).description = "open to all"
        lists.create(s, site.addr("secret")).advertised = False
    send(engine, "zed@example.net", site.addr("team-request"), subject="lists")
    reply = _reply(site, "zed@example.net")
    assert site.addr("open") in reply and "open to all" in reply
    assert site.address in reply
    assert site.addr("secret") not in reply
    assert "(2)" in reply


def test_password_never_takes_or_sends_one_by_mail(
    engine: ListEngine,  # noqa: F811
    site: Site,
) -> None:
    send(engine, "anne@example.com", site.addr("team-request"), body="password old new\n")
    reply = _reply(site, "anne@example.com")
    assert "never sent or changed by mail" in reply
    assert "old" not in reply.split("never")[1]


def test_options_is_set_show_and_needs_authentication(
    engine: ListEngine,  # noqa: F811
    site: Site,
) -> None:
    send(engine, "anne@example.com", site.addr("team-request"), subject="options")
    forged = _reply(site, "anne@example.com")
    send(engine, "anne@example.com", site.addr("team-request"), subject="set show")
    assert _reply(site, "anne@example.com").split("> set show")[1].strip() == (
        forged.split("> options")[1].strip()
    )
    send(
        engine, "anne@example.com", site.addr("team-request"), subject="options", authenticated=True
    )
    assert "delivery" in _reply(site, "anne@example.com").lower()


def test_remove_is_unsubscribe(engine: ListEngine, site: Site) -> None:  # noqa: F811
    send(engine, "anne@example.com", site.addr("team-request"), subject="remove")
    (confirmation,) = [m for m in site.mails_to("anne@example.com") if m["Reply-To"]]
    send(engine, "anne@example.com", site.addr(f"team-confirm+{token_in(confirmation)}"))
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        assert "anne@example.com" not in [m.address.email for m in mlist.members]


def test_help_names_the_mailman_21_commands(engine: ListEngine, site: Site) -> None:  # noqa: F811
    send(engine, "zed@example.net", site.addr("team-request"), subject="help")
    reply = _reply(site, "zed@example.net")
    for name in ("options", "info", "lists", "password", "remove"):
        assert f"    {name}" in reply or f" {name} " in reply, name
