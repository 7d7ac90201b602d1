"""Log in and log out."""

from __future__ import annotations

import secrets
import time

import falcon

from mtaplugin.web import accounts, cookies
from mtaplugin.web.forms import form
from mtaplugin.web.pages.common import gettext, see_other, session_of
from mtaplugin.web.render import render


def _safe_next(value: str) -> str:
    """Only a path on this site (no ``//host`` or ``scheme:``)."""
    if value.startswith("/") and not value.startswith("//") and "\\" not in value:
        return value
    return "/"


class Login:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        render(req, resp, "login.html", next=_safe_next(req.get_param("next") or "/"), email="")

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        f = form(req)
        email = f.get("email").strip()
        password = f.get("password")
        nxt = _safe_next(f.get("next", "/"))
        try:
            user = accounts.authenticate(session_of(req), req.remote_addr or "", email, password)
        except accounts.LockedOut:
            render(
                req,
                resp,
                "login.html",
                status=falcon.HTTP_429,
                next=nxt,
                email=email,
                error=gettext(req, "Too many failed log-ins for this address; wait 15 minutes."),
            )
            return
        if user is None:
            render(
                req,
                resp,
                "login.html",
                status=falcon.HTTP_401,
                next=nxt,
                email=email,
                error=gettext(req, "Wrong email address or password."),
            )
            return
        # A new CSRF token with every log in (no session fixation).
        req.context.web_session = cookies.WebSession(
            csrf=secrets.token_urlsafe(24),
            user_id=user.user_id,
            pw=cookies.password_fingerprint(user.password),
            issued=int(time.time()),
        )
        see_other(resp, nxt)


class Logout:
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.web_session = cookies.WebSession.anonymous()
        see_other(resp, "/")
