"""The web log-in limit (security review M6), through the log-in form (SQLite and
PostgreSQL): it counts the account as the lookup reads it (``x1 <victim@...>`` is the
victim), the client behind the proxy by ``X-Forwarded-For`` (only from a trusted proxy),
one client over all accounts, and slows an account down instead of locking it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from mtaplugin.clock import ManualClock, system_clock
from mtaplugin.manage import login_limit
from mtaplugin.web.app import create_web_app
from tests.helpers import unique
from tests.unit.webclient import PASSWORD, Client, Site, web_settings

pytestmark = pytest.mark.usefixtures("cheap_argon2")


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


def log_in(client: Client, email: str, password: str, via: str = "") -> int:
    """The status of one log-in; ``via``: the client address a proxy on 127.0.0.1 names."""
    headers = {"X-Forwarded-For": via} if via else {}
    form = {"email": email, "password": password, "next": "/"}
    return client.post("/login", form, headers=headers, follow=False).status_code


def test_display_name_variants_share_the_budget_of_the_address(site: Site) -> None:
    victim = f"mod@{site.host}"
    guesser = site.client()
    guesser.remote_addr = "203.0.113.61"
    for n in range(login_limit.MAX_FAILURES):
        assert log_in(guesser, f"x{n} <{victim.upper()}>", "a guess") == 401
    assert log_in(guesser, f"another <{victim}>", PASSWORD) == 429
    assert log_in(guesser, victim, PASSWORD) == 429
    assert "Too many failed log-ins for this address" in guesser.posted.text  # type: ignore[union-attr]


def test_behind_the_proxy_each_client_has_its_own_budget(site: Site) -> None:
    """The proxy on 127.0.0.1 (``forwarded_allow_ips``) names the client: a stranger who
    fails five times is refused, the account's owner from elsewhere is not.  What the
    stranger writes into ``X-Forwarded-For`` themselves (left of the proxy's) is ignored."""
    victim = f"mod@{site.host}"
    proxy = site.client()
    proxy.remote_addr = "127.0.0.1"
    for n in range(login_limit.MAX_FAILURES + 3):
        want = 401 if n < login_limit.MAX_FAILURES else 429
        assert log_in(proxy, victim, "a guess", via=f"10.9.8.{n}, 203.0.113.7") == want
    assert log_in(proxy, victim, PASSWORD, via="198.51.100.23") == 303


def test_x_forwarded_for_from_anyone_else_is_not_believed(site: Site) -> None:
    victim = f"mod@{site.host}"
    stranger = site.client()
    stranger.remote_addr = "203.0.113.62"
    for n in range(login_limit.MAX_FAILURES):
        assert log_in(stranger, victim, "a guess", via=f"198.51.100.{n}") == 401
    assert log_in(stranger, victim, PASSWORD, via="198.51.100.99") == 429


def test_an_ipv6_client_is_its_64(site: Site) -> None:
    """One host picks any address of its /64: the whole /64 is one client."""
    victim = f"mod@{site.host}"
    guesser = site.client()
    for n in range(login_limit.MAX_FAILURES):
        guesser.remote_addr = f"2001:db8:61::{n + 1:x}"
        assert log_in(guesser, victim, "a guess") == 401
    guesser.remote_addr = "2001:db8:61::ffff"
    assert log_in(guesser, victim, PASSWORD) == 429
    guesser.remote_addr = "2001:db8:62::1"
    assert log_in(guesser, victim, PASSWORD) == 303


def test_one_client_has_one_budget_for_all_accounts(site: Site) -> None:
    sprayer = site.client()
    sprayer.remote_addr = "203.0.113.63"
    for n in range(login_limit.CLIENT_MAX_FAILURES):
        assert log_in(sprayer, f"{unique('nobody')}{n}@example.org", "guess") == 401
    assert log_in(sprayer, f"mod@{site.host}", PASSWORD) == 429
    assert "from your network" in sprayer.posted.text  # type: ignore[union-attr]
    elsewhere = site.client()
    elsewhere.remote_addr = "198.51.100.64"
    assert log_in(elsewhere, f"mod@{site.host}", PASSWORD) == 303


def test_an_account_guessed_from_many_clients_slows_down_but_stays_open(
    site: Site, tmp_path: Path
) -> None:
    clock = ManualClock(system_clock())
    client = Client(create_web_app(web_settings(tmp_path / "clock"), site.sessions, clock))
    victim = f"mod@{site.host}"
    client.remote_addr = "127.0.0.1"  # the proxy: each try from another client
    for n in range(login_limit.ACCOUNT_FREE_FAILURES):
        assert log_in(client, victim, "a guess", via=f"198.18.0.{n}") == 401
    # the next try, even with the right password, waits a second after the last failure
    assert log_in(client, victim, PASSWORD, via="198.18.1.1") == 429
    refused = client.posted
    assert refused is not None and refused.headers["retry-after"] == "1"
    assert "try again in 1 seconds" in refused.text
    clock.advance(seconds=2)
    assert log_in(client, victim, "another guess", via="198.18.1.2") == 401
    # each failure doubles the wait, up to a minute; whoever comes after it is heard
    assert log_in(client, victim, PASSWORD, via="198.18.1.3") == 429
    clock.advance(seconds=3)
    assert log_in(client, victim, PASSWORD, via="198.18.1.4") == 303
    for n in range(20):
        clock.advance(login_limit.MAX_DELAY)
        assert log_in(client, victim, "guess", via=f"198.18.2.{n}") == 401
    assert log_in(client, victim, PASSWORD, via="198.18.3.1") == 429
    clock.advance(login_limit.MAX_DELAY + timedelta(seconds=1))
    assert log_in(client, victim, PASSWORD, via="198.18.3.2") == 303
