"""The Falcon application (the composition root of the API)."""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import platform
from typing import Any

import falcon

from mtaplugin import __version__
from mtaplugin.config import Settings
from mtaplugin.i18n import _

REALM = 'Basic realm="mtaplugin-rest",charset="utf-8"'


def _error_serializer(req: falcon.Request, resp: falcon.Response, exc: falcon.HTTPError) -> None:
    # Mailman's error body: {"title": "...", "description": "..."}
    body: dict[str, Any] = {"title": exc.title}
    if exc.description:
        body["description"] = exc.description
    resp.content_type = falcon.MEDIA_JSON
    resp.text = json.dumps(body)


class BasicAuth:
    """Deny by default: every request needs the site admin credential."""

    def __init__(self, settings: Settings) -> None:
        self.user = settings.api.admin_user.encode()
        self.password = settings.api.admin_password.encode()

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        header = req.get_header("Authorization") or ""
        scheme, _sp, token = header.partition(" ")
        ok = False
        if scheme.lower() == "basic":
            try:
                user, _c, password = base64.b64decode(token, validate=True).partition(b":")
            except (binascii.Error, ValueError):
                user = password = b""
            ok = hmac.compare_digest(user, self.user) & hmac.compare_digest(password, self.password)
        if not ok:
            raise falcon.HTTPUnauthorized(
                title="401 Unauthorized",
                description=_("REST API authorization failed"),
                challenges=[REALM],
            )


class BodyLimit:
    def __init__(self, limit: int) -> None:
        self.limit = limit

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if req.content_length is not None and req.content_length > self.limit:
            raise falcon.HTTPContentTooLarge(
                title="413 Payload Too Large",
                description=_("request body larger than {limit} bytes").format(limit=self.limit),
            )


def self_link(req: falcon.Request, path: str) -> str:
    """An absolute URL built from the request, as Mailman's clients expect."""
    return f"{req.prefix}{path}"


class Versions:
    def on_get(self, req: falcon.Request, resp: falcon.Response, api: str) -> None:
        resp.media = {
            "mailman_version": f"GNU Mailman 3.3.10 (compatible; mtaplugin {__version__})",
            "python_version": platform.python_version(),
            "api_version": api,
            "self_link": self_link(req, f"/{api}/system/versions"),
        }


def create_app(settings: Settings) -> falcon.App:
    app = falcon.App(middleware=[BodyLimit(settings.api.max_body_size), BasicAuth(settings)])
    app.set_error_serializer(_error_serializer)
    app.req_options.strip_url_path_trailing_slash = True
    versions = Versions()
    for api in ("3.0", "3.1"):
        app.add_route(f"/{api}/system/versions", _Fixed(versions, api))
        app.add_route(f"/{api}/system", _Fixed(versions, api))

    def _unexpected(req: falcon.Request, resp: falcon.Response, ex: Exception, params: Any) -> None:
        # No tracebacks in responses.
        if isinstance(ex, falcon.HTTPError):
            raise ex
        raise falcon.HTTPInternalServerError(
            title="500 Internal Server Error", description=_("internal error")
        )

    app.add_error_handler(Exception, _unexpected)
    return app


class _Fixed:
    """Bind the API version of a route to its resource."""

    def __init__(self, resource: Versions, api: str) -> None:
        self.resource = resource
        self.api = api

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.resource.on_get(req, resp, self.api)
