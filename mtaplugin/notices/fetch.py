"""Fetching a template's http(s) URI, the way Mailman does, with limits.

Mailman (``mailman.utilities.protocols.get``) fetches with ``requests.get(url,
timeout=5, auth=(username, password))``: HTTP basic authentication sent with the first
request when the template has a user name, the answer's text decoded with its charset.
mtaplugin does the same with the standard library, and adds what Mailman leaves out:

- the timeout bounds the whole fetch (connecting and every read), not each read alone, so
  a server that trickles one byte a second cannot hold the job;
- an answer longer than ``max_size`` bytes is refused;
- the credentials follow a redirect to the same host and port only, never to another
  server.

The reasons of a failure are in English: they go to the log and to the templates page.
"""

from __future__ import annotations

import base64
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from typing import Any
from urllib.parse import urlsplit


class FetchError(Exception):
    """The URI gave no text (the message says why, for the log and the web page)."""


class NotFound(FetchError):
    """The server answered 404: Mailman reads this as "no such template" (empty text)."""


@dataclass(frozen=True)
class Limits:
    timeout: float = 5.0
    max_size: int = 262_144


def fetch(uri: str, username: str = "", password: str = "", limits: Limits = Limits()) -> str:
    """The text at ``uri`` (http or https); :class:`FetchError` when there is none."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchError(f"not an http or https URI: {uri}")
    request = urllib.request.Request(uri, headers={"User-Agent": "mtaplugin"})
    if username:
        token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
        # "unredirected": urllib does not carry it to the server a redirect names
        request.add_unredirected_header("Authorization", f"Basic {token}")
    deadline = time.monotonic() + limits.timeout
    try:
        with _OPENER.open(request, timeout=limits.timeout) as response:
            length = response.headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) > limits.max_size:
                raise FetchError(_too_big(limits))
            body = bytearray()
            while True:
                if time.monotonic() > deadline:
                    raise FetchError(_timed_out(limits))
                chunk = response.read1(65536)
                if not chunk:
                    break
                body += chunk
                if len(body) > limits.max_size:
                    raise FetchError(_too_big(limits))
            return _decode(bytes(body), response.headers)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise NotFound("HTTP 404 (not found)") from exc
        raise FetchError(f"HTTP {exc.code} ({exc.reason})") from exc
    except TimeoutError as exc:
        raise FetchError(_timed_out(limits)) from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise FetchError(_timed_out(limits)) from exc
        raise FetchError(str(exc.reason)) from exc
    except OSError as exc:  # connection reset, refused mid-read ...
        raise FetchError(str(exc)) from exc


class _SameHostAuth(urllib.request.HTTPRedirectHandler):
    """Follow redirects; the Authorization goes along only to the same host and port (as
    requests does: credentials never go to another server)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        auth = req.unredirected_hdrs.get("Authorization")
        if new is not None and auth and urlsplit(newurl).netloc == urlsplit(req.full_url).netloc:
            new.add_unredirected_header("Authorization", auth)
        return new


_OPENER = urllib.request.build_opener(_SameHostAuth)


def _decode(body: bytes, headers: Message) -> str:
    charset = headers.get_content_charset() or "utf-8"
    try:
        return body.decode(charset, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def _too_big(limits: Limits) -> str:
    return f"longer than {limits.max_size} bytes (templates.max_size)"


def _timed_out(limits: Limits) -> str:
    return f"no answer within {limits.timeout:g} seconds (templates.fetch_timeout)"
