"""A real HTTP server for template fetches (http.server in a thread), with basic auth.

``pages`` maps a path to (status, body bytes, seconds to wait before answering, charset);
paths under ``/private/`` need the user ``fetch`` with the password ``s3cret``.  The server
listens on loopback, which template fetches refuse unless ``[templates] allow_hosts``
names it: :meth:`TemplateServer.limits` and :meth:`TemplateServer.settings` do (with the
port, so that the credentials go too)."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mtaplugin.config.site import TemplatesSettings
from mtaplugin.notices.fetch import Limits

USER, PASSWORD = "fetch", "s3cret"
#: the name of the members' footer template, the one most tests fetch
FOOTER = "list:member:regular:footer"


@dataclass
class Page:
    status: int = 200
    body: bytes = b""
    delay: float = 0.0
    charset: str = "utf-8"
    location: str = ""


@dataclass
class TemplateServer:
    base: str
    pages: dict[str, Page] = field(default_factory=dict)
    #: (path, Authorization header or "") of every request, in order
    requests: list[tuple[str, str]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return self.base + path

    @property
    def allow(self) -> tuple[str, ...]:
        """``allow_hosts`` entries for this server, under both its names."""
        port = self.base.rsplit(":", 1)[1]
        return (f"127.0.0.1:{port}", f"localhost:{port}")

    def limits(self, timeout: float = 5.0, max_size: int = 262_144) -> Limits:
        return Limits(timeout, max_size, self.allow)

    def settings(self, base: TemplatesSettings | None = None) -> TemplatesSettings:
        return replace(base or TemplatesSettings(), allow_hosts=self.allow)

    def put(
        self, path: str, text: str, status: int = 200, delay: float = 0.0, charset: str = "utf-8"
    ) -> None:
        self.pages[path] = Page(status, text.encode(charset), delay, charset)

    def redirect(self, path: str, location: str) -> None:
        self.pages[path] = Page(302, b"", location=location)


@contextmanager
def template_server() -> Iterator[TemplateServer]:
    state = TemplateServer(base="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            auth = self.headers.get("Authorization", "")
            state.requests.append((self.path, auth))
            page = state.pages.get(self.path, Page(404, b"not here"))
            if self.path.startswith("/private/") and not page.location:
                wanted = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
                if auth != wanted:
                    page = Page(401, b"who are you?")
            if page.delay:
                time.sleep(page.delay)
            self.send_response(page.status)
            self.send_header("Content-Type", f"text/plain; charset={page.charset}")
            self.send_header("Content-Length", str(len(page.body)))
            if page.location:
                self.send_header("Location", page.location)
            if page.status == 401:
                self.send_header("WWW-Authenticate", 'Basic realm="templates"')
            self.end_headers()
            self.wfile.write(page.body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
