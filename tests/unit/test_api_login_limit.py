"""Guessing a password over REST is limited as on the web's log-in page, and counted with
it (``mtaplugin.manage.login_limit``): before, REST's HTTP Basic checked every guess with
argon2, so the web's limit could be walked around by asking the API instead."""

from __future__ import annotations

import base64

import falcon
import pytest
from falcon.testing import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.api.app import create_app
from mtaplugin.api.auth import ADMIN_MAX_FAILURES
from mtaplugin.config import ApiSettings, DatabaseSettings, Settings
from mtaplugin.manage import login_limit, users
from mtaplugin.model import AuditEntry
from tests.helpers import unique

pytestmark = pytest.mark.usefixtures("cheap_argon2")

PASSWORD = "the right password"
ADMIN, ADMIN_PASSWORD = "restadmin", "the admin's password"


def basic(name: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{name}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture
def client(module_db_url: str, module_sessions: sessionmaker[Session]) -> TestClient:
    settings = Settings(
        database=DatabaseSettings(url=module_db_url),
        api=ApiSettings(admin_user=ADMIN, admin_password=ADMIN_PASSWORD),
    )
    return TestClient(create_app(settings, module_sessions))


def get(client: TestClient, who: str, password: str, ip: str) -> falcon.testing.Result:
    return client.simulate_get("/3.1/system/versions", headers=basic(who, password), remote_addr=ip)


def failures_of(sessions: sessionmaker[Session], email: str) -> int:
    with sessions() as s:
        return int(
            s.scalar(
                select(func.count(AuditEntry.id)).where(
                    AuditEntry.action == login_limit.ACTION,
                    AuditEntry.actor.endswith(f" {email}"),
                )
            )
            or 0
        )


def a_user(sessions: sessionmaker[Session], name: str) -> str:
    """A new user whose password is PASSWORD; their address."""
    email = f"{unique(name)}@example.org"
    with sessions.begin() as s:
        users.add_user(s, email, PASSWORD)
    return email


def test_a_users_rest_password_guesses_are_counted_and_then_refused(
    client: TestClient, module_sessions: sessionmaker[Session]
) -> None:
    email = a_user(module_sessions, "victim")
    for n in range(login_limit.MAX_FAILURES):
        assert get(client, email, f"guess {n}", "192.0.2.7").status_code == 401
    assert failures_of(module_sessions, email) == login_limit.MAX_FAILURES
    # Locked for this client: even the right password is refused, with no check spent on it.
    locked = get(client, email, PASSWORD, "192.0.2.7")
    assert locked.status_code == 429, locked.text
    assert int(locked.headers["Retry-After"]) > 0
    assert "too many failed log-ins" in locked.json["description"]
    assert failures_of(module_sessions, email) == login_limit.MAX_FAILURES  # not counted
    # The account's owner, elsewhere, is not locked out.
    assert get(client, email, PASSWORD, "198.51.100.4").status_code == 200


def test_rest_and_the_web_count_the_same_failures(
    client: TestClient, module_sessions: sessionmaker[Session]
) -> None:
    email = a_user(module_sessions, "shared")
    with module_sessions.begin() as s:
        for _n in range(login_limit.MAX_FAILURES):  # as the web's log-in page counts them
            assert users.authenticate(s, "192.0.2.9", email, "wrong on the web") is None
    assert get(client, email, PASSWORD, "192.0.2.9").status_code == 429


def test_an_unknown_name_is_counted_too(
    client: TestClient, module_sessions: sessionmaker[Session]
) -> None:
    email = f"{unique('nobody')}@example.org"
    for n in range(login_limit.MAX_FAILURES):
        assert get(client, email, f"guess {n}", "192.0.2.11").status_code == 401
    assert get(client, email, "another", "192.0.2.11").status_code == 429


def test_the_admin_credential_is_refused_to_a_client_that_guessed_too_often(
    client: TestClient,
) -> None:
    for n in range(ADMIN_MAX_FAILURES):
        assert get(client, ADMIN, f"guess {n}", "192.0.2.20").status_code == 401
    refused = get(client, ADMIN, ADMIN_PASSWORD, "192.0.2.20")
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert get(client, ADMIN, ADMIN_PASSWORD, "192.0.2.21").status_code == 200
