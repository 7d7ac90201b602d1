"""The links the web UI mails point only at configured addresses (SQLite and PostgreSQL).

The attack (security review H1): POST a password reset (or a sign-up, or one more address)
for someone else with ``Host: evil.example``; a link built from the request would mail the
victim ``https://evil.example/reset/<token>``, and whoever runs evil.example gets the token
when the victim clicks.  Every such link must come from ``[web] base_url`` (a list's
confirmation links from its domain's ``base_url``, else ``[web] base_url``); a site with
neither mails no link and says why."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import func, select

from mtaplugin.manage import domains, users
from mtaplugin.model import OutboxMessage, PendingRequest
from mtaplugin.web.app import create_web_app
from tests.helpers import unique
from tests.unit.test_accounts import mails_to, new_account
from tests.unit.webclient import (
    BASE_URL,
    PASSWORD,
    Client,
    Site,
    web_settings,
)

EVIL = {"Host": "evil.example", "X-Forwarded-Host": "evil.example"}
URL = re.compile(r"https?://[^\s>\"']+")


pytestmark = pytest.mark.usefixtures("cheap_argon2")


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


@pytest.fixture
def bare(site: Site, tmp_path: Path) -> Client:
    """A client of the same site whose settings name no ``[web] base_url``."""
    settings = web_settings(tmp_path / "bare", MTAPLUGIN_WEB_BASE_URL="")
    return Client(create_web_app(settings, site.sessions))


def only_configured(mail: str, base: str = BASE_URL) -> list[str]:
    """The links of ``mail``, each checked to start with ``base``."""
    found = URL.findall(mail)
    assert found, mail
    assert "evil.example" not in mail and "falconframework" not in mail
    assert all(u.startswith(base + "/") for u in found), found
    return found


def outbox_count(site: Site) -> int:
    with site.sessions() as s:
        return s.scalar(select(func.count(OutboxMessage.id))) or 0


def pending_for(site: Site, email: str) -> int:
    with site.sessions() as s:
        query = select(func.count(PendingRequest.id)).where(PendingRequest.email == email)
        return s.scalar(query) or 0


def test_a_reset_asked_with_a_foreign_host_mails_the_configured_address(site: Site) -> None:
    victim = f"mod@{site.host}"
    page = site.client().post("/reset", {"email": victim}, headers=EVIL)
    assert page.status_code == 200
    [mail] = mails_to(site, victim)
    [link] = only_configured(mail)
    assert re.fullmatch(re.escape(BASE_URL) + r"/reset/\w+", link)


def test_sign_up_and_its_account_exists_note_ignore_a_foreign_host(site: Site) -> None:
    email = f"{unique('signup')}@example.net"
    client = site.client()
    client.post(
        "/signup",
        {"email": email, "password": PASSWORD, "password_again": PASSWORD},
        headers=EVIL,
    )
    [verify] = mails_to(site, email)
    assert "/account/verify/" in only_configured(verify)[0]
    # the note to an address that has an account names the log-in and reset pages
    holder = f"{unique('holder')}@example.net"
    new_account(site, holder)
    client.post(
        "/signup",
        {"email": holder, "password": "another password", "password_again": "another password"},
        headers=EVIL,
    )
    note = mails_to(site, holder)[-1]
    assert "You already have an account" in note
    assert {u.rsplit("/", 1)[1] for u in only_configured(note)} == {"login", "reset"}


def test_one_more_address_is_verified_through_the_configured_address(site: Site) -> None:
    client = new_account(site, f"{unique('me')}@example.net")
    other = f"{unique('second')}@example.org"
    added = client.post("/account", {"action": "add", "email": other}, headers=EVIL)
    assert added.status_code == 200
    [mail] = mails_to(site, other)
    assert "/account/verify/" in only_configured(mail)[0]


def test_confirmation_links_use_the_domain_then_the_site_address(site: Site) -> None:
    with site.sessions.begin() as s:
        domains.get(s, site.host).base_url = "https://team.example"
    first = f"{unique('joiner')}@example.net"
    site.client().post(f"/lists/{site.list_id}/subscribe", {"email": first}, headers=EVIL)
    [mail] = mails_to(site, first)
    assert "/confirm/" in only_configured(mail, "https://team.example")[0]
    with site.sessions.begin() as s:
        domains.get(s, site.host).base_url = ""
    second = f"{unique('joiner')}@example.net"
    site.client().post(f"/lists/{site.list_id}/subscribe", {"email": second}, headers=EVIL)
    [mail] = mails_to(site, second)
    assert "/confirm/" in only_configured(mail)[0]


def test_without_a_base_url_no_link_is_mailed_and_the_page_says_why(
    site: Site, bare: Client
) -> None:
    before = outbox_count(site)
    victim = f"mod@{site.host}"
    reset = bare.post("/reset", {"email": victim}, headers=EVIL)
    assert reset.status_code == 503 and "[web] base_url" in reset.text
    assert pending_for(site, victim) == 0
    email = f"{unique('nolink')}@example.net"
    signed = bare.post(
        "/signup", {"email": email, "password": PASSWORD, "password_again": PASSWORD}
    )
    assert signed.status_code == 503 and "[web] base_url" in signed.text
    assert pending_for(site, email) == 0
    assert bare.login(victim).status_code == 303
    other = f"{unique('nolink2')}@example.org"
    added = bare.post("/account", {"action": "add", "email": other})
    assert added.status_code == 503 and "[web] base_url" in added.text
    assert pending_for(site, other) == 0
    assert outbox_count(site) == before
    with site.sessions() as s:
        assert users.find_address(s, other) is None


def test_without_any_base_url_a_confirmation_goes_out_without_a_link(
    site: Site, bare: Client
) -> None:
    with site.sessions.begin() as s:
        domains.get(s, site.host).base_url = ""
    email = f"{unique('byreply')}@example.net"
    page = bare.post(f"/lists/{site.list_id}/subscribe", {"email": email}, headers=EVIL)
    assert "reply to it to confirm" in page.text
    [mail] = mails_to(site, email)
    assert "/confirm/" not in mail and "evil.example" not in mail
    assert pending_for(site, email) == 1
