"""The Falcon application of the REST API; its database sessions come from the process's
world (:func:`mtaplugin.wiring.build`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import falcon
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.api.auth import Authenticate
from mtaplugin.api.browsers import CrossSiteWrites
from mtaplugin.api.routes import add_routes
from mtaplugin.clock import Clock, system_clock
from mtaplugin.config import Settings
from mtaplugin.config.site import TemplatesSettings
from mtaplugin.errors import (
    AlreadyExists,
    DatabaseUnavailable,
    InvalidInput,
    NotAllowed,
    NotFound,
)
from mtaplugin.i18n import _
from mtaplugin.manage.subscriptions import DEFAULTS, WorkflowSettings

log = logging.getLogger(__name__)
VERSIONS = ("3.0", "3.1")


def _error_serializer(req: falcon.Request, resp: falcon.Response, exc: falcon.HTTPError) -> None:
    # Mailman's error body: {"title": "...", "description": "..."}
    body: dict[str, Any] = {"title": exc.title}
    if exc.description:
        body["description"] = exc.description
    resp.content_type = falcon.MEDIA_JSON
    resp.text = json.dumps(body)


class BodyLimit:
    def __init__(self, limit: int) -> None:
        self.limit = limit

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if req.content_length is not None and req.content_length > self.limit:
            raise falcon.HTTPContentTooLarge(
                title="413 Payload Too Large",
                description=_("request body larger than {limit} bytes").format(limit=self.limit),
            )


class Context:
    """The API version of the request and the absolute base of its URLs: ``[api]
    base_url`` when set (a proxy in front may rewrite Host), else the request's."""

    def __init__(self, base_url: str = "") -> None:
        self.base_url = base_url.rstrip("/")

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        version = req.path.lstrip("/").split("/", 1)[0]
        req.context.api = version if version in VERSIONS else "3.1"
        req.context.base = f"{self.base_url or req.prefix}/{req.context.api}"


class Database:
    """One transaction per request: committed when the responder succeeded."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        workflow: WorkflowSettings = DEFAULTS,
        secret_key: str = "",
        templates: TemplatesSettings | None = None,
    ) -> None:
        self.factory = factory
        self.workflow = workflow
        #: how template URIs are fetched (one set through REST is fetched at once)
        self.templates = templates or TemplatesSettings()
        #: the hosts list owners may name in template URIs although not public
        self.template_hosts = self.templates.allow_hosts
        #: the site's secret (one-click unsubscribe links in the digests a request sends)
        self.secret_key = secret_key

    def process_resource(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, params: Any
    ) -> None:
        if resource is not None:
            req.context.session = self.factory()
            req.context.workflow = self.workflow
            req.context.secret_key = self.secret_key
            req.context.template_hosts = self.template_hosts
            req.context.templates = self.templates
            req.context.sessions = self.factory
            #: what a responder asks to run once its change is committed (never when the
            #: change is rolled back): each is run in turn, a failure logged
            req.context.after_commit = []

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        session: Session | None = getattr(req.context, "session", None)
        if session is None:
            return
        committed = False
        try:
            if req_succeeded:
                session.commit()
                committed = True
            else:
                session.rollback()
        except IntegrityError:
            session.rollback()
            _answer(resp, falcon.HTTP_409, "409 Conflict", _("the change conflicts with data"))
        except (OperationalError, PoolTimeout):
            session.rollback()
            _answer(
                resp,
                falcon.HTTP_503,
                "503 Service Unavailable",
                _("the list database cannot be reached; try again later"),
            )
        except Exception:
            log.exception("commit failed")
            session.rollback()
            _answer(resp, falcon.HTTP_500, "500 Internal Server Error", _("internal error"))
        finally:
            session.close()
        if committed:
            _after_commit(req.context.after_commit)


def _after_commit(hooks: list[Callable[[], object]]) -> None:
    for hook in hooks:
        try:
            hook()
        except Exception:
            log.exception("after the commit: %r failed", hook)


def _answer(resp: falcon.Response, status: str, title: str, description: str) -> None:
    resp.status = status
    resp.content_type = falcon.MEDIA_JSON
    resp.location = None
    resp.text = json.dumps({"title": title, "description": description})


def _input_error(req: falcon.Request, resp: falcon.Response, ex: Exception, params: Any) -> None:
    assert isinstance(ex, InvalidInput)
    if isinstance(ex, NotFound):
        raise falcon.HTTPNotFound(title="404 Not Found", description=ex.problem)
    if isinstance(ex, AlreadyExists):
        raise falcon.HTTPBadRequest(title="400 Bad Request", description=ex.problem)
    raise falcon.HTTPBadRequest(
        title="400 Bad Request",
        description=_('Invalid Parameter "{field}": {problem}').format(
            field=ex.field, problem=ex.problem
        ),
    )


def _not_allowed(req: falcon.Request, resp: falcon.Response, ex: Exception, params: Any) -> None:
    assert isinstance(ex, NotAllowed)
    raise falcon.HTTPForbidden(title="403 Forbidden", description=ex.problem)


def _conflict(req: falcon.Request, resp: falcon.Response, ex: Exception, params: Any) -> None:
    raise falcon.HTTPConflict(title="409 Conflict", description=_("the change conflicts with data"))


def _unavailable(req: falcon.Request, resp: falcon.Response, ex: Exception, params: Any) -> None:
    raise falcon.HTTPServiceUnavailable(
        title="503 Service Unavailable",
        description=_("the list database cannot be reached; try again later"),
    )


def _unexpected(req: falcon.Request, resp: falcon.Response, ex: Exception, params: Any) -> None:
    # No tracebacks in responses: the log has it.
    log.exception("error in %s %s", req.method, req.path)
    raise falcon.HTTPInternalServerError(
        title="500 Internal Server Error", description=_("internal error")
    )


def create_app(
    settings: Settings, factory: sessionmaker[Session], clock: Clock = system_clock
) -> falcon.App[falcon.Request, falcon.Response]:
    app: falcon.App[falcon.Request, falcon.Response] = falcon.App(
        middleware=[
            BodyLimit(settings.api.max_body_size),
            Context(settings.api.base_url),
            CrossSiteWrites(),
            Authenticate(settings, factory, clock),
            Database(
                factory,
                WorkflowSettings.from_settings(settings, clock),
                secret_key=settings.site.secret_key,
                templates=settings.templates,
            ),
        ]
    )
    app.set_error_serializer(_error_serializer)
    app.req_options.strip_url_path_trailing_slash = True
    app.add_error_handler(Exception, _unexpected)
    app.add_error_handler(InvalidInput, _input_error)
    app.add_error_handler(NotAllowed, _not_allowed)
    app.add_error_handler(IntegrityError, _conflict)
    app.add_error_handler(DatabaseUnavailable, _unavailable)
    app.add_error_handler(OperationalError, _unavailable)
    app.add_error_handler(PoolTimeout, _unavailable)
    for version in VERSIONS:
        add_routes(app, f"/{version}", settings)
    return app
