"""Log in and log out."""

from __future__ import annotations

import falcon

from mtaplugin.config import Settings
from mtaplugin.errors import InvalidInput
from mtaplugin.manage import login_limit, password_reset, users
from mtaplugin.manage.accounts import Links
from mtaplugin.model import AuditEntry, PendingRequest
from mtaplugin.web import client_ip, cookies, links
from mtaplugin.web.common import (
    gettext,
    redirect_after,
    see_other,
    session_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import no_base_url, render, render_form


def _safe_next(value: str) -> str:
    """Only a path on this site (no ``//host`` or ``scheme:``)."""
    if value.startswith("/") and not value.startswith("//") and "\\" not in value:
        return value
    return "/"


class Login:
    def __init__(self, settings: Settings) -> None:
        self.proxies = client_ip.networks(settings.web.forwarded_allow_ips)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        render(req, resp, "login.html", next=_safe_next(req.get_param("next") or "/"), email="")

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        f = form(req)
        email = f.get("email").strip()
        password = f.get("password")
        nxt = _safe_next(f.get("next", "/"))

        def refuse(status: str, error: str) -> None:
            render(req, resp, "login.html", status=status, next=nxt, email=email, error=error)

        ip = client_ip.client_ip(req, self.proxies)
        try:
            user = users.authenticate(session_of(req), ip, email, password, workflow_of(req).clock)
        except users.LockedOut as exc:
            resp.set_header("Retry-After", str(exc.retry_after))
            refuse(falcon.HTTP_429, _refusal(req, exc))
            return
        if user is None:
            refuse(falcon.HTTP_401, gettext(req, "Wrong email address or password."))
            return
        # A new CSRF token with every log in (no session fixation).
        now = workflow_of(req).clock()
        req.context.web_session = cookies.WebSession.logged_in(user.user_id, user.password, now)
        see_other(resp, nxt)


def _refusal(req: falcon.Request, exc: users.LockedOut) -> str:
    if exc.why is login_limit.Why.client:
        return gettext(req, "Too many failed log-ins from your network; wait 15 minutes.")
    if exc.why is login_limit.Why.slowed:
        said = gettext(
            req, "Many log-ins for this address failed lately; try again in {seconds} seconds."
        )
        return said.format(seconds=exc.retry_after)
    return gettext(req, "Too many failed log-ins for this address; wait 15 minutes.")


class Logout:
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        ws = req.context.web_session
        now = workflow_of(req).clock()
        if ws.user_id:
            # the cookie stays valid until it expires: its session is ended on the server
            # (at the time of the app's clock, which also dates the cookie)
            session_of(req).add(
                AuditEntry(
                    actor=cookies.session_id(ws),
                    action=cookies.LOGOUT,
                    at=now,
                    detail={"user_id": ws.user_id},
                )
            )
        req.context.web_session = cookies.WebSession.anonymous(now)
        see_other(resp, "/")


class ResetRequest:
    """Asks for an address and mails a reset link (the same answer for every address)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        render(req, resp, "reset_request.html", email="")

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        email = form(req).get("email").strip()
        try:
            base = Links(links.site_base(self.settings))
            password_reset.request_reset(session_of(req), workflow_of(req), base, email)
        except links.NoBaseUrl:
            no_base_url(req, resp, "reset_request.html", email=email)
            return
        said = gettext(
            req,
            "If {email} belongs to a user, a message with a link is on its way; "
            "the link works for an hour.",
        )
        redirect_after(req, resp, "/reset", said.format(email=email))


class ResetPassword:
    def _pending(self, req: falcon.Request, token: str) -> PendingRequest:
        pending = password_reset.find(session_of(req), token, workflow_of(req).clock)
        if pending is None:
            raise falcon.HTTPNotFound(
                title=gettext(req, "Unknown or expired link"),
                description=gettext(req, "Ask for a new password reset link."),
            )
        return pending

    def on_get(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        pending = self._pending(req, token)
        render(req, resp, "reset_password.html", email=pending.email)

    def on_post(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        pending = self._pending(req, token)
        try:
            password = form(req).new_password()
            password_reset.reset(session_of(req), pending, password, workflow_of(req).now())
        except InvalidInput as exc:
            error = f"{exc.field}: {exc.problem}"
            render_form(req, resp, "reset_password.html", email=pending.email, error=error)
            return
        redirect_after(
            req, resp, "/login", gettext(req, "Your password is changed; log in with it.")
        )
