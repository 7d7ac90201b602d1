"""One clock: the web's session cookie and the writes the web and REST make through
``manage/`` read the clock the app was given, not the machine's.  The clock here runs
years ahead of the wall clock, so a read of the wall clock anywhere on these paths shows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from falcon.testing import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.api.app import create_app
from mtaplugin.clock import ManualClock
from mtaplugin.config import DatabaseSettings, Settings
from mtaplugin.db import sessionmaker_for
from mtaplugin.model import Address, AuditEntry
from mtaplugin.web import cookies
from mtaplugin.web.app import create_web_app
from tests.unit.test_api import Api
from tests.unit.webclient import Site, web_settings

#: far from any machine's time, so that the wall clock cannot pass for it
AHEAD = datetime(2041, 3, 7, 9, 30, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(AHEAD)


@pytest.fixture
def site(web_site: Site, clock: ManualClock, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """The web site, its app on ``clock``."""
    var_dir = tmp_path_factory.mktemp("clock") / "var"
    web_site.app = create_web_app(web_settings(var_dir), web_site.sessions, clock)
    return web_site


def test_a_web_session_ends_max_age_after_the_log_in_by_the_apps_clock(
    site: Site, clock: ManualClock
) -> None:
    client = site.client()
    assert client.login(f"owner@{site.host}").status_code == 303
    settings = f"/lists/{site.list_id}/settings"
    clock.advance(seconds=cookies.MAX_AGE - 60)
    assert client.get(settings).status_code == 200
    clock.advance(seconds=120)
    expired = client.get(settings)
    assert expired.status_code == 303 and "/login" in expired.headers["location"]


def test_a_log_out_ends_the_session_on_a_clock_ahead_of_the_machine(site: Site) -> None:
    """The log-out is dated by the clock that dates the cookie: a copy of the cookie is
    worth nothing after it, whatever the machine's time."""
    client = site.client()
    client.login(f"owner@{site.host}")
    stolen = site.client()
    stolen.cookie = client.cookie
    client.post("/logout", {})
    page = stolen.get(f"/lists/{site.list_id}/settings")
    assert page.status_code == 303 and "/login" in page.headers["location"]


def _verified_on(sessions: sessionmaker[Session], email: str) -> datetime | None:
    with sessions() as s:
        return s.scalar(select(Address.verified_on).where(Address.email == email))


def test_an_address_the_web_admin_adds_is_verified_and_audited_at_the_apps_clock(
    site: Site, clock: ManualClock
) -> None:
    owner = site.client()
    owner.login(f"owner@{site.host}")
    clock.advance(hours=1)
    for role, email in (("moderator", "mod2@example.org"), ("member", "new@example.org")):
        added = owner.post(
            f"/lists/{site.list_id}/members", {"op": "add", "role": role, "email": email}
        )
        assert added.status_code == 200, (role, added.text)
        assert _verified_on(site.sessions, email) == clock(), role
    with site.sessions() as s:
        dates = s.scalars(
            select(AuditEntry.at).where(
                AuditEntry.action == "member.add", AuditEntry.actor == f"web:owner@{site.host}"
            )
        ).all()
    assert dates and set(dates) == {clock()}


def test_a_moderator_rest_adds_is_verified_at_the_apps_clock(
    site: Site, clock: ManualClock, module_db_url: str, module_engine: Engine
) -> None:
    settings = Settings(database=DatabaseSettings(url=module_db_url))
    api = Api(TestClient(create_app(settings, sessionmaker_for(module_engine), clock)))
    clock.advance(timedelta(days=2))
    body = f"list_id={site.list_id}&subscriber=rest-mod@example.org&role=moderator"
    assert api.post("members", body).status_code == 201
    assert _verified_on(site.sessions, "rest-mod@example.org") == clock()
