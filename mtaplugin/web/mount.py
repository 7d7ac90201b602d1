"""One WSGI application for gunicorn: the REST API under ``/3.0/`` and ``/3.1/``, the web
pages everywhere else.  Each keeps its own middleware (the API its HTTP Basic check, the
web its session cookie and CSRF check)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
API_PREFIXES = ("/3.0/", "/3.1/")


def mount(api: WSGIApp, web: WSGIApp) -> WSGIApp:
    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "") or "/"
        if path.startswith(API_PREFIXES) or path in ("/3.0", "/3.1"):
            return api(environ, start_response)
        return web(environ, start_response)

    return application
