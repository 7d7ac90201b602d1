"""``/lists/{list}/requests`` lists what :func:`mtaplugin.manage.pending.waiting` lists: on
the app's clock (not the wall clock), oldest first, the count agreeing with the list."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from falcon.testing import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.api.app import create_app
from mtaplugin.clock import ManualClock
from mtaplugin.config import DatabaseSettings, Settings
from mtaplugin.db import sessionmaker_for
from mtaplugin.enums import RequestType, TokenOwner
from mtaplugin.manage import pending
from tests.unit.sites import Site
from tests.unit.test_api import Api


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def api(module_db_url: str, module_engine: Engine, clock: ManualClock) -> Iterator[Api]:
    settings = Settings(database=DatabaseSettings(url=module_db_url))
    yield Api(TestClient(create_app(settings, sessionmaker_for(module_engine), clock)))


def _ask(sessions: sessionmaker[Session], site: Site, email: str, clock: ManualClock) -> None:
    with sessions.begin() as s:
        pending.create(
            s,
            RequestType.subscription,
            email,
            step="moderate",
            owner=TokenOwner.moderator,
            life=timedelta(days=3),
            now=clock(),
            mailing_list_id=site.mlist().id,
        )


def test_the_requests_are_listed_on_the_apps_clock(
    api: Api, site: Site, clock: ManualClock, module_sessions: sessionmaker[Session]
) -> None:
    _ask(module_sessions, site, "later@example.org", clock)  # oldest: created first
    clock.advance(days=2)
    _ask(module_sessions, site, "newer@example.org", clock)
    path = f"lists/{site.list_id}/requests"
    entries = api.get(path).json["entries"]
    assert [e["email"] for e in entries] == ["later@example.org", "newer@example.org"]
    assert api.get(f"{path}/count").json["count"] == 2
    # A day and a half later by the app's clock the first request has expired (whatever
    # the wall clock says: the listing reads the clock the app was given).
    clock.advance(days=1, hours=12)
    found = api.get(f"{path}?token_owner=moderator").json
    assert [e["email"] for e in found["entries"]] == ["newer@example.org"]
    assert found["total_size"] == 1
    assert api.get(f"{path}/count").json["count"] == 1
    assert api.get(f"{path}?token_owner=subscriber").json["total_size"] == 0
    assert api.get(f"{path}?request_type=unsubscription").json["total_size"] == 0
