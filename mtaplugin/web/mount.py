"""One WSGI application for gunicorn: the REST API under ``/3.0/`` and ``/3.1/``, the web
pages everywhere else.  Each keeps its own middleware (the API its HTTP Basic check, the
web its session cookie and CSRF check).

With a listener of its own for the web UI (``web.listen``), :func:`split` serves each
request by the port it arrived on (the listening socket's, never a header the client
wrote): the web UI's port serves the pages only, every other port the REST API only."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
API_PREFIXES = ("/3.0/", "/3.1/")


def is_api(environ: dict[str, Any]) -> bool:
    path = environ.get("PATH_INFO", "") or "/"
    return path.startswith(API_PREFIXES) or path in ("/3.0", "/3.1")


def mount(api: WSGIApp, web: WSGIApp) -> WSGIApp:
    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if is_api(environ):
            return api(environ, start_response)
        return web(environ, start_response)

    return application


def _not_found(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    body = b"404 Not Found\n"
    start_response(
        "404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
    )
    return [body]


def arrival_port(environ: dict[str, Any]) -> int:
    """The local port the request's connection arrived on."""
    sock = environ.get("gunicorn.socket")
    if sock is not None:
        try:
            return int(sock.getsockname()[1])
        except (OSError, IndexError, TypeError):
            pass
    return int(environ.get("SERVER_PORT") or 0)


def split(api: WSGIApp, web: WSGIApp, web_port: int) -> WSGIApp:
    """The web UI on ``web_port`` (``/3.x/`` answers 404 there), the REST API on every
    other port (the rest answers 404 there)."""

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        on_web = arrival_port(environ) == web_port
        if on_web and not is_api(environ):
            return web(environ, start_response)
        if not on_web and is_api(environ):
            return api(environ, start_response)
        return _not_found(environ, start_response)

    return application
