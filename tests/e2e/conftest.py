"""Browser tests: headless Chromium (Debian's package, driven by Playwright for Python)
against the web UI of ``mtaplugin serve`` in the private Postfix lab of
tests/integration/conftest.py, on SQLite and on PostgreSQL.

Screenshots of the main pages go to ``test-output/screenshots/`` (kept as artefacts).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from sqlalchemy.orm import Session

from mtaplugin.enums import ArchivePolicy, MemberRole
from mtaplugin.manage import members, users
from mtaplugin.model import MailingList
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailauth import lab_dns  # noqa: F401  (a pytest fixture)
from tests.conftest import BACKENDS
from tests.helpers import unique
from tests.integration.conftest import (  # noqa: F401  (pytest fixtures)
    db,
    lab_database,
    lab_sessions,
    postfix_lab,
    pytest_collection_modifyitems,
)
from tests.integration.labs import make_list

CHROMIUM = os.environ.get("MTAPLUGIN_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The machine running the suite may be busy (a private Postfix, gunicorn, the worker).
expect.set_options(timeout=30_000)
#: the log-in password of the members the tests make users of
PASSWORD = "e2e password 123"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"


@pytest.fixture(scope="package", params=BACKENDS)
def lab(
    request: pytest.FixtureRequest,
    lab_root: Path,
    lab_dns: DnsServer,  # noqa: F811
) -> Iterator[Lab]:
    """A Postfix lab like the integration tests', but its own, stopped when the browser
    tests are done (the integration tests start theirs after)."""
    url = lab_database(request, lab_root, request.param)
    with postfix_lab(lab_root / f"lab-e2e-{request.param}", url, lab_dns) as started:
        yield started


def chromium() -> Iterator[Browser]:
    """Debian's headless Chromium under Playwright, closed at the end."""
    if not Path(CHROMIUM).exists():
        raise pytest.UsageError(f"{CHROMIUM} is missing: make test installs Debian's chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    yield from chromium()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(locale="en-US", viewport={"width": 1200, "height": 900})
    context.set_default_timeout(30_000)
    pg = context.new_page()
    yield pg
    context.close()


@pytest.fixture
def web(lab: Lab) -> str:
    """The web UI's base URL: the same gunicorn as the REST API."""
    return f"http://127.0.0.1:{lab.api_port}"


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Callable[[Page, str], Path]:
    """``shot(page, "held-queue")`` saves a full-page screenshot, named per backend."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    callspec = getattr(request.node, "callspec", None)
    backend = callspec.params.get("lab", "") if callspec is not None else ""
    suffix = f"-{backend}" if backend else ""

    def _shot(pg: Page, name: str) -> Path:
        path = SCREENSHOTS / f"{name}{suffix}.png"
        pg.screenshot(path=str(path), full_page=True)
        return path

    return _shot


def fresh(session: Session) -> None:
    """End the session's transaction and forget what it read.

    On SQLite an open read transaction would block the server's writes."""
    session.rollback()
    session.expire_all()


def member_emails(session: Session, mlist: MailingList) -> list[str]:
    """The list's regular members' addresses, read afresh."""
    fresh(session)
    try:
        return [a.email for _m, a in members.roster(session, mlist, MemberRole.member)]
    finally:
        fresh(session)


def log_in(page: Page, web: str, email: str, password: str) -> None:
    page.goto(f"{web}/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("form[action='/login'] button[type=submit]")
    page.wait_for_selector("text=Log out")


def private_archive(session: Session) -> tuple[str, str, MailingList]:
    """A new list with a private archive and two members, ann (who has a log-in: her
    address and :data:`PASSWORD`) and bob: their addresses and the list."""
    ann, bob = f"{unique('ann')}@example.org", f"{unique('bob')}@example.org"
    mlist = make_list(session, ann, bob, archive_policy=ArchivePolicy.private)
    users.add_user(session, ann, PASSWORD)
    session.commit()
    return ann, bob, mlist
