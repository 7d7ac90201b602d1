"""A small cookie-keeping client for the web app (falcon.testing), and the site with the
web app on it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import falcon
from falcon import testing
from passlib.context import CryptContext
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config
from mtaplugin.config import Settings
from mtaplugin.enums import MemberRole
from mtaplugin.manage import users
from mtaplugin.web.app import create_web_app
from mtaplugin.web.cookies import COOKIE
from tests.helpers import unique
from tests.unit import sites

SECRET = "unit-test-secret-0123456789abcdef0123456789"
#: the web UI's public address in the unit tests' settings (``[web] base_url``): where the
#: mailed links point
BASE_URL = "https://lists.example"
PASSWORD = "correct horse battery"
CHEAP_PASSWORDS = CryptContext(
    schemes=["argon2"], argon2__memory_cost=256, argon2__rounds=1, argon2__parallelism=1
)
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class _FormReader(HTMLParser):
    """The name/value pairs a browser submits for the page's form with ``action``: hidden and
    text inputs, checked boxes only, the selected option, textareas, in document order."""

    def __init__(self, action: str) -> None:
        super().__init__(convert_charrefs=True)
        self.action = action
        self.inside = False
        self.pairs: list[tuple[str, str]] = []
        self._select: str | None = None
        self._first_option: str | None = None
        self._selected = False
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.inside = a.get("action") == self.action
        if not self.inside:
            return
        name = a.get("name")
        if tag == "input" and name:
            kind = a.get("type", "text")
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            self.pairs.append((name, a.get("value", "on" if kind == "checkbox" else "")))
        elif tag == "select" and name:
            self._select, self._first_option, self._selected = name, None, False
        elif tag == "option" and self._select is not None:
            if self._first_option is None:
                self._first_option = a.get("value", "")
            if "selected" in a and not self._selected:
                self._selected = True
                self.pairs.append((self._select, a.get("value", "")))
        elif tag == "textarea" and name:
            self._textarea, self._text = name, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "select" and self._select is not None:
            if not self._selected:
                self.pairs.append((self._select, self._first_option or ""))
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            text = "".join(self._text)
            self.pairs.append((self._textarea, text[1:] if text.startswith("\n") else text))
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)


def form_of(html: str, action: str) -> list[tuple[str, str]]:
    """What a browser would submit, unchanged, for the form posting to ``action``."""
    reader = _FormReader(action)
    reader.feed(html)
    return reader.pairs


@dataclass
class Client:
    app: falcon.App[falcon.Request, falcon.Response]
    cookie: str = ""
    remote_addr: str = "192.0.2.1"
    last: testing.Result | None = field(default=None, repr=False)
    posted: testing.Result | None = field(default=None, repr=False)

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
        follow: bool = True,
    ) -> testing.Result:
        """Post the form; like a browser, follow a 303 to the page it names (unless
        ``follow`` is false); :attr:`posted` keeps the answer to the post itself."""
        items = list(data.items()) if isinstance(data, dict) else list(data)
        if csrf:
            items.append(("csrf_token", self.csrf()))
        cookies = {COOKIE: self.cookie} if self.cookie else None
        answer = self._keep(
            testing.simulate_post(
                self.app,
                path,
                body=urlencode(items, doseq=True),
                headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})},
                cookies=cookies,
                remote_addr=self.remote_addr,
            )
        )
        self.posted = answer
        location = answer.headers.get("location")
        if follow and answer.status_code == 303 and location:
            return self.get(urlsplit(location).path, query_string=urlsplit(location).query)
        return answer

    def login(self, email: str, password: str = PASSWORD) -> testing.Result:
        return self.post(
            "/login", {"email": email, "password": password, "next": "/"}, follow=False
        )


@dataclass
class Site(sites.Site):
    """The unit tests' site, with the web app on its database."""

    app: falcon.App[falcon.Request, falcon.Response] = field(kw_only=True)

    def client(self) -> Client:
        return Client(self.app)

    def owner(self) -> Client:
        """A client logged in as the list's owner."""
        client = self.client()
        client.login(f"owner@{self.host}")
        return client


def web_settings(var_dir: Path, **environ: str) -> Settings:
    """The unit tests' settings of the web UI (``environ``: more ``MTAPLUGIN_*`` values)."""
    return config.load(
        environ={
            "MTAPLUGIN_SITE_SECRET_KEY": SECRET,
            "MTAPLUGIN_SITE_VAR_DIR": str(var_dir),
            "MTAPLUGIN_WEB_BASE_URL": BASE_URL,
            **environ,
        }
    )


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
    sites.make_site(sessions, roster, host=host, base_url=BASE_URL)
    with sessions.begin() as s:
        users.add_user(s, f"owner@{host}", PASSWORD)
        users.add_user(s, f"mod@{host}", PASSWORD)
    return Site(sessions, host, app=create_web_app(web_settings(var_dir), sessions))
