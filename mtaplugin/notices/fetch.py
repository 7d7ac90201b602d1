"""Fetching a template's http(s) URI, the way Mailman does, with limits.

Mailman (``mailman.utilities.protocols.get``) fetches with ``requests.get(url,
timeout=5, auth=(username, password))``: HTTP basic authentication sent with the first
request when the template has a user name, the answer's text decoded with its charset.
mtaplugin does the same with the standard library, and adds what Mailman leaves out:

- only public addresses, or hosts the site allows by name (``allow_hosts``), are
  fetched from, checked after every redirect, and the connection goes to the address
  that was checked (:mod:`mtaplugin.notices.destinations`); no proxy is used;
- the timeout bounds the whole fetch (connecting and every read), not each
  read alone, so a server that trickles one byte a second cannot hold the job;
- an answer longer than ``max_size`` bytes is refused;
- the credentials follow a redirect to the same scheme, host and port only, never to
  another server, and go to a loopback address only when ``allow_hosts`` names its port.

The reasons of a failure are in English, and are categories ("could not connect", "no
answer within 5 seconds", "HTTP 404 (not found)"): they go to the templates page, which
the list's owners read, so they name no address and no error number (those go to the
log, for the site admin).
"""

from __future__ import annotations

import base64
import http.client
import logging
import socket
import ssl
import time
from dataclasses import dataclass
from email.message import Message
from urllib.parse import urljoin, urlsplit

from mtaplugin.notices.destinations import Destination, Refused, destination

log = logging.getLogger(__name__)

#: redirects followed (requests follows 30, urllib 10: a template needs one or two)
MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class FetchError(Exception):
    """The URI gave no text (the message says why, for the log and the web page)."""


class NotFound(FetchError):
    """The server answered 404: Mailman reads this as "no such template" (empty text)."""


@dataclass(frozen=True)
class Limits:
    timeout: float = 5.0
    max_size: int = 262_144
    #: hosts (``name`` or ``name:port``) fetched from although they are not public
    allow_hosts: tuple[str, ...] = ()


def fetch(uri: str, username: str = "", password: str = "", limits: Limits = Limits()) -> str:
    """The text at ``uri`` (http or https); :class:`FetchError` when there is none."""
    deadline = time.monotonic() + limits.timeout
    origin = _origin(uri)
    url = uri
    for _hop in range(MAX_REDIRECTS + 1):
        try:
            where = destination(url, limits.allow_hosts, bool(username))
        except Refused as exc:
            raise FetchError(f"could not fetch: {exc}") from None
        auth = username if where.credentials and _origin(url) == origin else ""
        status, reason, location, body, headers = _get(url, where, auth, password, limits, deadline)
        if status in _REDIRECTS and location:
            url = urljoin(url, location)
            continue
        if status == 404:
            raise NotFound("HTTP 404 (not found)")
        if status >= 400:
            raise FetchError(f"HTTP {status} ({reason})")
        if status >= 300:
            raise FetchError(f"HTTP {status} ({reason}) without a place to go")
        return _decode(body, headers)
    raise FetchError(f"could not fetch: more than {MAX_REDIRECTS} redirects")


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _connect(where: Destination, timeout: float) -> socket.socket:
    """A connection to the first of the checked addresses that answers."""
    last: OSError = OSError("no address")
    for family, sockaddr in where.addresses:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            last = exc
    raise last


class _Http(http.client.HTTPConnection):
    """A connection to the checked addresses of ``where`` (never resolved again)."""

    def __init__(self, where: Destination, timeout: float) -> None:
        super().__init__(where.host, where.port, timeout=timeout)
        self.where, self.seconds = where, timeout

    def connect(self) -> None:
        self.sock = _connect(self.where, self.seconds)


class _Https(http.client.HTTPSConnection):
    """The same with TLS: the certificate is checked against the name in the URI."""

    def __init__(self, where: Destination, timeout: float) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(where.host, where.port, timeout=timeout, context=self.tls)
        self.where, self.seconds = where, timeout

    def connect(self) -> None:
        sock = _connect(self.where, self.seconds)
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.where.host)


def _get(
    url: str,
    where: Destination,
    username: str,
    password: str,
    limits: Limits,
    deadline: float,
) -> tuple[int, str, str, bytes, Message]:
    """(status, reason, Location, body, headers) of one GET of ``url`` at ``where``."""
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {"User-Agent": "mtaplugin"}
    if username:
        token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
        headers["Authorization"] = f"Basic {token}"
    https = parts.scheme.lower() == "https"
    conn = (_Https if https else _Http)(where, _left(deadline, limits))
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        location = response.getheader("Location") or ""
        if response.status in _REDIRECTS or response.status >= 300:
            return response.status, response.reason, location, b"", response.msg
        length = response.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) > limits.max_size:
            raise FetchError(_too_big(limits))
        body = bytearray()
        while True:
            if conn.sock is not None:
                conn.sock.settimeout(_left(deadline, limits))
            chunk = response.read1(65536)
            if not chunk:
                break
            body += chunk
            if len(body) > limits.max_size:
                raise FetchError(_too_big(limits))
        return response.status, response.reason, location, bytes(body), response.msg
    except TimeoutError:
        raise FetchError(_timed_out(limits)) from None
    except ssl.SSLError as exc:
        log.warning("template fetch %s: %s", url, exc)
        raise FetchError("could not fetch: the secure connection failed") from None
    except (OSError, http.client.HTTPException) as exc:
        # refused, unreachable, reset, a broken answer: the detail is for the log only
        log.warning("template fetch %s: %s", url, exc)
        raise FetchError("could not fetch: no connection or no valid answer") from None
    finally:
        conn.close()


def _left(deadline: float, limits: Limits) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchError(_timed_out(limits))
    return left


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
