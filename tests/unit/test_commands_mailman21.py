"""Mailman 2.1's email commands that a moved site's members still send: ``info``,
``lists``, ``password``, ``options`` (``set show``) and ``remove`` (``unsubscribe``),
decided by the real engine on the module's database."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from mtaplugin.engine import ListEngine
from mtaplugin.manage import lists
from mtaplugin.model import Domain
from tests.helpers import confirm_token as token_in
from tests.helpers import plain_text as body
from tests.unit.sites import Site
from tests.unit.test_commands import (
    command_engine,
    send,
    site_roster,  # noqa: F401 (a fixture)
)


@pytest.fixture
def engine(site: Site) -> ListEngine:
    return command_engine(site)


def _reply(site: Site, to: str) -> str:
    return body(site.mails_to(to)[-1])


def ask(engine: ListEngine, site: Site, sender: str, **mail: Any) -> str:
    """What the list's -request address answers ``sender``'s mail (``send``'s words)."""
    send(engine, sender, site.addr("team-request"), **mail)
    return _reply(site, sender)


def test_info_tells_what_the_list_is_and_where_to_read_more(engine: ListEngine, site: Site) -> None:
    site.update(display_name="Team", description="The team's list", info="Be kind.")
    with site.sessions.begin() as s:
        domain = s.scalar(select(Domain).where(Domain.mail_host == site.host))
        assert domain is not None
        domain.base_url = "https://lists.example/"
    reply = ask(engine, site, "zed@example.net", subject="info")
    assert "Team <" + site.address + ">" in reply
    assert "The team's list" in reply and "Be kind." in reply
    assert site.addr("team-request") in reply
    assert f"https://lists.example/lists/{site.list_id}/" in reply


def test_lists_names_the_advertised_lists_of_the_domain_only(
    engine: ListEngine, site: Site
) -> None:
    with site.sessions.begin() as s:
        lists.create(s, site.addr("open")).description = "open to all"
        lists.create(s, site.addr("secret")).advertised = False
    reply = ask(engine, site, "zed@example.net", subject="lists")
    assert site.addr("open") in reply and "open to all" in reply
    assert site.address in reply
    assert site.addr("secret") not in reply
    assert "(2)" in reply


def test_password_never_takes_or_sends_one_by_mail(engine: ListEngine, site: Site) -> None:
    reply = ask(engine, site, "anne@example.com", body="password old new\n")
    assert "never sent or changed by mail" in reply
    assert "old" not in reply.split("never")[1]


def test_options_is_set_show_and_needs_authentication(engine: ListEngine, site: Site) -> None:
    forged = ask(engine, site, "anne@example.com", subject="options")
    shown = ask(engine, site, "anne@example.com", subject="set show")
    assert shown.split("> set show")[1].strip() == forged.split("> options")[1].strip()
    options = ask(engine, site, "anne@example.com", subject="options", authenticated=True)
    assert "delivery" in options.lower()


def test_remove_is_unsubscribe(engine: ListEngine, site: Site) -> None:
    send(engine, "anne@example.com", site.addr("team-request"), subject="remove")
    (confirmation,) = [m for m in site.mails_to("anne@example.com") if m["Reply-To"]]
    send(engine, "anne@example.com", site.addr(f"team-confirm+{token_in(confirmation)}"))
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        assert "anne@example.com" not in [m.address.email for m in mlist.members]


def test_help_names_the_mailman_21_commands(engine: ListEngine, site: Site) -> None:
    reply = ask(engine, site, "zed@example.net", subject="help")
    for name in ("options", "info", "lists", "password", "remove"):
        assert f"    {name}" in reply or f" {name} " in reply, name
