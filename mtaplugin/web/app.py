"""The web Falcon app: middleware (headers, session, database, CSRF), errors, routes."""

from __future__ import annotations

import hmac
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import falcon
from sqlalchemy import select
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import i18n
from mtaplugin.clock import Clock, system_clock
from mtaplugin.config import Settings
from mtaplugin.errors import DatabaseUnavailable, InvalidInput, NotAllowed, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import users
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import AuditEntry
from mtaplugin.web import cookies, keys, language, roles
from mtaplugin.web.forms import form
from mtaplugin.web.render import render

log = logging.getLogger(__name__)

CSP = (
    "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; "
    "object-src 'none'; img-src 'self'"
)


class SecurityHeaders:
    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, ok: bool
    ) -> None:
        if resp.get_header("Content-Security-Policy") is None:  # downloads set a stricter one
            resp.set_header("Content-Security-Policy", CSP)
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.set_header("X-Frame-Options", "DENY")
        resp.set_header("Referrer-Policy", "same-origin")
        if not req.path.startswith("/static/"):
            resp.set_header("Cache-Control", "no-store")


class WebSessions:
    """Reads the signed session cookie; writes it back when it changed.  Whether a cookie
    has expired is the app's clock's to say."""

    def __init__(self, key: bytes, clock: Clock) -> None:
        self.key = key
        self.clock = clock

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        value = req.cookies.get(cookies.COOKIE)
        now = self.clock()
        session = cookies.load(self.key, value, now) if value else None
        req.context.cookie_was = session
        req.context.web_session = session or cookies.WebSession.anonymous(now)

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, ok: bool
    ) -> None:
        session = req.context.web_session
        if getattr(resource, "stateless", False) or session == req.context.cookie_was:
            return
        resp.set_cookie(
            cookies.COOKIE,
            cookies.dump(self.key, session),
            max_age=cookies.MAX_AGE,
            path="/",
            secure=req.scheme == "https",
            http_only=True,
            same_site="Lax",
        )


class Database:
    """One transaction per page; the viewer (who is logged in) and the CSRF check."""

    def __init__(
        self, factory: sessionmaker[Session], settings: Settings, clock: Clock = system_clock
    ) -> None:
        self.factory = factory
        self.settings = settings
        self.workflow = WorkflowSettings.from_settings(settings, clock)

    def process_resource(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, params: Any
    ) -> None:
        if resource is None:
            return
        if req.method == "POST" and not getattr(resource, "csrf_exempt", False):
            sent = form(req).get("csrf_token")
            if not sent or not hmac.compare_digest(sent, req.context.web_session.csrf):
                raise falcon.HTTPForbidden(
                    title=_("Form expired"),
                    description=_(
                        "The form was missing its security token or it has expired; "
                        "go back, reload the page and try again."
                    ),
                )
        session = self.factory()
        req.context.session = session
        req.context.settings = self.settings
        req.context.workflow = self.workflow
        user = None
        ws = req.context.web_session
        if ws.user_id:
            user = users.user_by_id(session, ws.user_id)
            if (
                user is None
                or cookies.password_fingerprint(user.password) != ws.pw
                or _logged_out(session, ws)
            ):
                user = None
                req.context.web_session = cookies.WebSession.anonymous(self.workflow.clock())
        req.context.viewer = roles.viewer_for(session, user)
        pref = user.preferred_language if user is not None else None
        req.context.language = language.choose(
            pref, req.get_header("Accept-Language") or "", self.settings.site.default_language
        )
        # Where i18n keeps a current language (``using``), the ``_()`` of the shared code
        # (manage/, notices) speaks the page's language too.
        using = getattr(i18n, "using", None)
        if using is not None:
            req.context.language_scope = using(req.context.language)
            req.context.language_scope.__enter__()

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, ok: bool
    ) -> None:
        scope = getattr(req.context, "language_scope", None)
        if scope is not None:
            scope.__exit__(None, None, None)
        session: Session | None = getattr(req.context, "session", None)
        if session is None:
            return
        try:
            if ok:
                session.commit()
            else:
                session.rollback()
        finally:
            session.close()


def _logged_out(session: Session, ws: cookies.WebSession) -> bool:
    """Whether this session was ended by a log-out (then its cookie is worth nothing)."""
    since = datetime.fromtimestamp(ws.issued, UTC) - timedelta(seconds=1)
    found = session.scalar(
        select(AuditEntry.id)
        .where(
            AuditEntry.at >= since,
            AuditEntry.action == cookies.LOGOUT,
            AuditEntry.actor == cookies.session_id(ws),
        )
        .limit(1)
    )
    return found is not None


def _language_only(req: falcon.Request, settings: Settings) -> None:
    if not hasattr(req.context, "language"):
        req.context.language = language.choose(
            None, req.get_header("Accept-Language") or "", settings.site.default_language
        )


def _error_page(
    req: falcon.Request,
    resp: falcon.Response,
    settings: Settings,
    status: str,
    title: str,
    description: str,
) -> None:
    """The error page, in the language the request asks for."""
    _language_only(req, settings)
    render(req, resp, "error.html", status=status, title=title, description=description)


def _error_handlers(app: falcon.App[falcon.Request, falcon.Response], settings: Settings) -> None:
    def http_error(req: falcon.Request, resp: falcon.Response, ex: Any, params: Any) -> None:
        if ex.headers:
            for name, value in ex.headers.items():
                resp.set_header(name, value)
        _error_page(req, resp, settings, ex.status, ex.title or "", ex.description or "")

    def input_error(req: falcon.Request, resp: falcon.Response, ex: Any, params: Any) -> None:
        status = falcon.HTTP_404 if isinstance(ex, NotFound) else falcon.HTTP_400
        _error_page(req, resp, settings, status, ex.field, ex.problem)

    def not_allowed(req: falcon.Request, resp: falcon.Response, ex: Any, params: Any) -> None:
        _error_page(req, resp, settings, falcon.HTTP_403, _("Not allowed"), ex.problem)

    def unavailable(req: falcon.Request, resp: falcon.Response, ex: Any, params: Any) -> None:
        title = _("Try again later")
        description = _("The list database cannot be reached; try again later.")
        _error_page(req, resp, settings, falcon.HTTP_503, title, description)

    def unexpected(req: falcon.Request, resp: falcon.Response, ex: Any, params: Any) -> None:
        log.exception("error in %s %s", req.method, req.path)
        title, description = _("Internal error"), _("Something went wrong; the error was logged.")
        _error_page(req, resp, settings, falcon.HTTP_500, title, description)

    app.add_error_handler(Exception, unexpected)
    app.add_error_handler(falcon.HTTPError, http_error)
    app.add_error_handler(InvalidInput, input_error)
    app.add_error_handler(NotAllowed, not_allowed)
    for kind in (DatabaseUnavailable, OperationalError, PoolTimeout):
        app.add_error_handler(kind, unavailable)


def create_web_app(
    settings: Settings, factory: sessionmaker[Session], clock: Clock = system_clock
) -> falcon.App[falcon.Request, falcon.Response]:
    secret = keys.site_secret(settings)
    app: falcon.App[falcon.Request, falcon.Response] = falcon.App(
        middleware=[
            SecurityHeaders(),
            WebSessions(keys.derive(secret, "session"), clock),
            Database(factory, settings, clock),
        ]
    )
    app.req_options.strip_url_path_trailing_slash = True
    app.resp_options.secure_cookies_by_default = False
    _error_handlers(app, settings)
    from mtaplugin.web import routes

    routes.add_routes(app, settings)
    return app
