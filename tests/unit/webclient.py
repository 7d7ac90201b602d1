"""A small cookie-keeping client for the web app (falcon.testing), and the site with the
web app on it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import falcon
from falcon import testing
from passlib.context import CryptContext
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config
from mtaplugin.manage import users
from mtaplugin.model.enums import MemberRole
from mtaplugin.web.app import create_web_app
from mtaplugin.web.cookies import COOKIE
from tests.helpers import unique
from tests.unit import sites

SECRET = "unit-test-secret-0123456789abcdef0123456789"
PASSWORD = "correct horse battery"
CHEAP_PASSWORDS = CryptContext(
    schemes=["argon2"], argon2__memory_cost=256, argon2__rounds=1, argon2__parallelism=1
)
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class Client:
    app: falcon.App[falcon.Request, falcon.Response]
    cookie: str = ""
    remote_addr: str = "192.0.2.1"
    last: testing.Result | None = field(default=None, repr=False)

    def _keep(self, result: testing.Result) -> testing.Result:
        if COOKIE in result.cookies:
            self.cookie = result.cookies[COOKIE].value
        self.last = result
        return result

    def get(self, path: str, **kw: object) -> testing.Result:
        cookies = {COOKIE: self.cookie} if self.cookie else None
        return self._keep(
            testing.simulate_get(
                self.app, path, cookies=cookies, remote_addr=self.remote_addr, **kw
            )
        )

    def csrf(self) -> str:
        page = self.get("/login")
        found = _CSRF.search(page.text)
        assert found is not None
        return found.group(1)

    def post(
        self,
        path: str,
        data: dict[str, object] | list[tuple[str, str]],
        csrf: bool = True,
        headers: dict[str, str] | None = None,
    ) -> testing.Result:
        items = list(data.items()) if isinstance(data, dict) else list(data)
        if csrf:
            items.append(("csrf_token", self.csrf()))
        cookies = {COOKIE: self.cookie} if self.cookie else None
        return self._keep(
            testing.simulate_post(
                self.app,
                path,
                body=urlencode(items, doseq=True),
                headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})},
                cookies=cookies,
                remote_addr=self.remote_addr,
            )
        )

    def login(self, email: str, password: str = PASSWORD) -> testing.Result:
        return self.post("/login", {"email": email, "password": password, "next": "/"})


@dataclass
class Site(sites.Site):
    """The unit tests' site, with the web app on its database."""

    app: falcon.App[falcon.Request, falcon.Response] = field(kw_only=True)

    def client(self) -> Client:
        return Client(self.app)


def make_site(sessions: sessionmaker[Session], var_dir: Path) -> Site:
    """A domain with one list ``team``: an owner and a moderator (with their users), then
    two members."""
    host = f"{unique('web')}.test"
    roster = sites.Roster(
        team=(
            (f"owner@{host}", MemberRole.owner),
            (f"mod@{host}", MemberRole.moderator),
            ("anne@example.com", MemberRole.member),
            ("bob@example.com", MemberRole.member),
        )
    )
    sites.make_site(sessions, roster, host=host, base_url="https://lists.example")
    with sessions.begin() as s:
        users.add_user(s, f"owner@{host}", PASSWORD)
        users.add_user(s, f"mod@{host}", PASSWORD)
    settings = config.load(
        environ={
            "MTAPLUGIN_SITE_SECRET_KEY": SECRET,
            "MTAPLUGIN_SITE_VAR_DIR": str(var_dir),
        }
    )
    return Site(sessions, host, app=create_web_app(settings, sessions))
