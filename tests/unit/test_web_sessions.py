"""The web session's doors: cookie flags, a new session at log-in, a log-out that ends the
session for every copy of its cookie, the log-in limit shared by two app instances (two
workers) on one database (SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest
from falcon import testing

from mtaplugin import config
from mtaplugin.clock import system_clock
from mtaplugin.manage import users
from mtaplugin.web import cookies
from mtaplugin.web.app import create_web_app
from tests.unit.webclient import SECRET, Client, Site

pytestmark = pytest.mark.usefixtures("cheap_argon2")


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


def _set_cookie(result: testing.Result) -> str:
    return next(v for k, v in result.headers.items() if k == "set-cookie" and cookies.COOKIE in v)


def test_cookie_flags_over_http_and_https(site: Site) -> None:
    plain = testing.simulate_get(site.app, "/login")
    flags = _set_cookie(plain)
    assert "HttpOnly" in flags and "SameSite=Lax" in flags and "Secure" not in flags
    assert "Path=/" in flags and f"Max-Age={cookies.MAX_AGE}" in flags
    tls = testing.simulate_get(site.app, "/login", protocol="https")
    assert "Secure" in _set_cookie(tls) and "HttpOnly" in _set_cookie(tls)


def test_the_session_changes_at_log_in_and_a_planted_cookie_stays_anonymous(site: Site) -> None:
    """Session fixation: a cookie an attacker planted before the log-in is not the session
    after it; the CSRF token (the session's name) is new."""
    client = site.client()
    client.get("/login")
    planted = client.cookie
    before = cookies.load(cookies_key(site), planted, system_clock())
    assert before is not None and before.user_id is None
    assert client.login(f"owner@{site.host}").status_code == 303
    after = cookies.load(cookies_key(site), client.cookie, system_clock())
    assert after is not None and after.user_id is not None
    assert after.csrf != before.csrf and client.cookie != planted
    attacker = Client(site.app, cookie=planted)
    assert attacker.get(f"/lists/{site.list_id}/settings").status_code == 303  # to log in


def cookies_key(site: Site) -> bytes:
    from mtaplugin.web import keys

    settings = config.load(
        environ={"MTAPLUGIN_SITE_SECRET_KEY": SECRET, "MTAPLUGIN_SITE_VAR_DIR": "/nonexistent"}
    )
    return keys.derive(keys.site_secret(settings), "session")


def test_log_out_ends_the_session_for_every_copy_of_the_cookie(site: Site) -> None:
    client = site.client()
    client.login(f"owner@{site.host}")
    stolen = Client(site.app, cookie=client.cookie, remote_addr="198.51.100.7")
    assert stolen.get(f"/lists/{site.list_id}/settings").status_code == 200
    client.post("/logout", {})
    assert client.get(f"/lists/{site.list_id}/settings").status_code == 303
    # the copy taken before the log-out is worth nothing now
    page = stolen.get(f"/lists/{site.list_id}/settings")
    assert page.status_code == 303 and "/login" in page.headers["location"]
    # and a new log in (a new session) works at once
    assert client.login(f"owner@{site.host}").status_code == 303
    assert client.get(f"/lists/{site.list_id}/settings").status_code == 200


def test_the_log_in_limit_holds_across_two_workers(site: Site, tmp_path: Path) -> None:
    """Two app instances (two gunicorn workers) on one database share the failures."""
    settings = config.load(
        environ={
            "MTAPLUGIN_SITE_SECRET_KEY": SECRET,
            "MTAPLUGIN_SITE_VAR_DIR": str(tmp_path / "var"),
        }
    )
    second = create_web_app(settings, site.sessions)
    one, two = site.client(), Client(second)
    who = f"mod@{site.host}"
    for n in range(users.MAX_FAILURES):
        worker = one if n % 2 else two
        assert worker.login(who, "a wrong guess").status_code == 401
    for worker in (one, two):
        refused = worker.login(who)  # even the right password
        assert refused.status_code == 429, worker
        assert "Too many failed log-ins" in refused.text
