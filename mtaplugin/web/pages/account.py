"""Accounts: sign up, verify a mailed link, the account page (addresses, password,
deletion) and the global preferences (:mod:`mtaplugin.manage.accounts`)."""

from __future__ import annotations

import falcon

from mtaplugin.config import Settings
from mtaplugin.enums import DeliveryMode, RequestType
from mtaplugin.errors import AlreadyExists, InvalidInput
from mtaplugin.manage import account_deletion, account_profile, accounts, preferences
from mtaplugin.model import PendingRequest, User
from mtaplugin.web import cookies, language, links
from mtaplugin.web.common import (
    gettext,
    redirect_after,
    require_login,
    session_of,
    settings_of,
    viewer_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.list_settings import language_name
from mtaplugin.web.render import form_status, no_base_url, render, render_form
from mtaplugin.web.setting_help import choice_label


def _links(req: falcon.Request) -> accounts.Links:
    """The mailed links, at ``[web] base_url`` (:class:`links.NoBaseUrl` without it)."""
    return accounts.Links(links.site_base(settings_of(req)))


def _log_in(req: falcon.Request, user: User) -> None:
    """A new session (and CSRF token) for ``user``."""
    now = workflow_of(req).clock()
    req.context.web_session = cookies.WebSession.logged_in(user.user_id, user.password, now)


def _me(req: falcon.Request) -> User:
    viewer = require_login(req)
    assert viewer.user is not None
    return viewer.user


class SignUp:
    def __init__(self, settings: Settings) -> None:
        self.open = settings.web.signup

    def _closed(self, req: falcon.Request) -> None:
        if not self.open:
            raise falcon.HTTPForbidden(
                title=gettext(req, "Sign-up is closed"),
                description=gettext(
                    req, "This site makes accounts itself; ask the site's administrators."
                ),
            )

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self._closed(req)
        if viewer_of(req).logged_in:
            raise falcon.HTTPSeeOther("/account")
        render(req, resp, "signup.html", email="", display_name="")

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        self._closed(req)
        f = form(req)
        email = f.get("email").strip()
        name = f.get("display_name").strip()
        try:
            password = f.new_password()
            accounts.request_signup(
                session_of(req), workflow_of(req), _links(req), email, password, name
            )
        except InvalidInput as exc:
            error = f"{exc.field}: {exc.problem}"
            render_form(req, resp, "signup.html", email=email, display_name=name, error=error)
            return
        except links.NoBaseUrl:
            no_base_url(req, resp, "signup.html", email=email, display_name=name)
            return
        said = gettext(
            req,
            "We sent a message to {email}; open the link in it to finish. "
            "If no message comes, look in your spam folder or ask again in ten minutes.",
        )
        redirect_after(req, resp, "/signup", said.format(email=email))


class Verify:
    """The mailed link: a GET shows a button (mail scanners follow links), its POST acts."""

    def _invalid(self, req: falcon.Request, resp: falcon.Response, problem: str) -> None:
        render(
            req,
            resp,
            "error.html",
            status=falcon.HTTP_404,
            title=gettext(req, "Unknown or expired link"),
            description=problem,
        )

    def _not_the_asker(self, req: falcon.Request, request: PendingRequest) -> bool:
        """An address joins only the account that asked for it, logged in: whoever merely
        got the mail (perhaps tricked into opening it) cannot attach it to a stranger's."""
        if request.request_type is not RequestType.address_verification:
            return False
        viewer = viewer_of(req)
        return viewer.user is None or viewer.user.user_id != request.data.get("user_id")

    def on_get(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        try:
            request = accounts.find_request(session_of(req), workflow_of(req), token)
        except accounts.InvalidLink as exc:
            self._invalid(req, resp, exc.problem)
            return
        if self._not_the_asker(req, request):
            require_login(req)
            raise falcon.HTTPForbidden(
                title=gettext(req, "Not allowed"),
                description=gettext(
                    req, "Log in to the account that asked for this address, then open the link."
                ),
            )
        render(
            req,
            resp,
            "account_verify.html",
            email=request.email,
            registration=request.request_type is RequestType.registration,
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        session = session_of(req)
        try:
            request = accounts.find_request(session, workflow_of(req), token)
            kind = request.request_type
            if self._not_the_asker(req, request):
                raise falcon.HTTPForbidden(
                    title=gettext(req, "Not allowed"),
                    description=gettext(
                        req,
                        "Log in to the account that asked for this address, then open the link.",
                    ),
                )
            user = accounts.verify(session, workflow_of(req), token, form(req).get("password"))
        except (accounts.InvalidLink, AlreadyExists) as exc:
            # the request is unknown, or used up: nothing else changed
            self._invalid(req, resp, exc.problem)
            return
        except InvalidInput as exc:
            render(
                req,
                resp,
                "account_verify.html",
                status=falcon.HTTP_400,
                email=request.email,
                registration=True,
                error=f"{exc.field}: {exc.problem}",
            )
            return
        if kind is RequestType.registration:
            _log_in(req, user)
            said = gettext(req, "Your account is ready, and you are logged in.")
        else:
            said = gettext(req, "The address is verified and added to your account.")
        redirect_after(req, resp, "/account", said)


class Account:
    def _show(
        self, req: falcon.Request, resp: falcon.Response, error: str = "", status: str = ""
    ) -> None:
        user = _me(req)
        session = session_of(req)
        render(
            req,
            resp,
            "account.html",
            status=status or form_status(error),
            error=error,
            user=user,
            addresses=account_profile.verified_addresses(session, user),
            waiting=account_profile.waiting_addresses(session, workflow_of(req), user),
            held=account_deletion.roles_held(session, user),
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self._show(req, resp)

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        user = _me(req)
        session = session_of(req)
        f = form(req)
        action = f.get("action")
        email = f.get("email").strip()
        try:
            if action == "add":
                addr = account_profile.request_address(
                    session, workflow_of(req), _links(req), user, email
                )
                said = gettext(
                    req, "We sent a message to {email}; open the link in it to add the address."
                ).format(email=addr)
            elif action == "preferred":
                account_profile.set_preferred(session, user, email)
                said = gettext(req, "{email} is your preferred address now.").format(email=email)
            elif action == "remove":
                account_profile.remove_address(session, user, email, workflow_of(req).now())
                said = gettext(
                    req, "{email} is not part of your account any more; its lists keep it."
                ).format(email=email)
            elif action == "password":
                account_profile.change_password(
                    session,
                    user,
                    f.get("current_password"),
                    f.get("password"),
                    f.get("password_again"),
                    workflow_of(req).now(),
                )
                _log_in(req, user)  # the new password ends the other sessions, not this one
                said = gettext(req, "Your password is changed.")
            elif action == "delete":
                if not f.get("sure"):
                    raise InvalidInput("sure", gettext(req, "tick the box to say you mean it"))
                left = account_deletion.delete_account(
                    session, workflow_of(req), user, f.get("password")
                )
                req.context.web_session = cookies.WebSession.anonymous(workflow_of(req).clock())
                said = gettext(req, "Your account is deleted.")
                if left:
                    said += " " + gettext(req, "You left these lists: {lists}.").format(
                        lists=", ".join(left)
                    )
                redirect_after(req, resp, "/", said)
                return
            else:
                raise InvalidInput("action", gettext(req, "unknown action"))
        except InvalidInput as exc:
            session.rollback()
            self._show(req, resp, error=f"{exc.field}: {exc.problem}")
            return
        except links.NoBaseUrl:
            self._show(req, resp, error=gettext(req, links.NO_BASE_URL), status=falcon.HTTP_503)
            return
        redirect_after(req, resp, "/account", said)


def _yes_no(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")


class GlobalPreferences:
    """The account's preferences for every list (a list's own choice on "My lists" wins)."""

    def _show(self, req: falcon.Request, resp: falcon.Response, error: str = "") -> None:
        user = _me(req)
        render_form(
            req,
            resp,
            "account_preferences.html",
            error=error,
            user=user,
            modes=[(m.value, choice_label("DeliveryMode", m.value)) for m in DeliveryMode],
            languages=[(code, language_name(code)) for code in sorted(language.available())],
            flags=[(key, _yes_no(getattr(user, key))) for key in preferences.FLAGS],
            delivery="off" if user.delivery_status is not None else "on",
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self._show(req, resp)

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        user = _me(req)
        f = form(req)
        keys = ("delivery_mode", "delivery", "preferred_language", *preferences.FLAGS)
        try:
            chosen = {k: f.get(k) for k in keys if k in f}
            preferences.set_global_in(session_of(req), user, chosen, workflow_of(req).now())
        except InvalidInput as exc:
            self._show(req, resp, error=f"{exc.field}: {exc.problem}")
            return
        session_of(req).flush()
        req.context.language = language.choose(
            user.preferred_language, req.get_header("Accept-Language") or "", "en"
        )
        redirect_after(req, resp, "/account/preferences", gettext(req, "Saved your preferences."))
