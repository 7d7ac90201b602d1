"""A small NNTP client (RFC 3977, AUTHINFO USER/PASS of RFC 4643) over a socket: the
real :class:`~mtaplugin.news.NewsServer`.  (Python 3.13 has no nntplib.)

Why not pynntp (the maintained NNTP library on PyPI): it is built for reading binaries
from large Usenet servers; its ``article()`` hands back a parsed header dictionary
(repeated fields such as ``Received:`` collapse, their order is lost) and yEnc-decoded
bodies, and its ``post()`` takes a header mapping.  The gateway must move an article's
bytes as they are, both ways (the loop check reads ``List-Id:`` and the DKIM-signed
headers must stay byte for byte), and it needs four commands: GROUP, ARTICLE, POST and
AUTHINFO.

``tls=True`` is implicit TLS (NNTPS, RFC 8143: TLS from the first byte, usually port 563),
with the system's certificate authorities and host name check.

Errors are :class:`~mtaplugin.news.NewsError`: temporary when the server cannot be reached,
times out, closes the connection, or answers 4xx (but 411 no such group, 423 no such
article number and 430 no such article, which will not change); permanent for 5xx.
"""

from __future__ import annotations

import contextlib
import io
import socket
import ssl
from dataclasses import dataclass, field

from mtaplugin.news import GroupStatus, NewsError, NewsServer

#: 4xx replies that are final answers, not "try again later"
FINAL_4XX = frozenset({411, 423, 430})
#: the longest reply line we read (RFC 3977: 512 octets; articles' lines may be longer)
MAX_LINE = 64 * 1024


def dot_stuff(article: bytes) -> bytes:
    """The article as it goes after POST's 340: CRLF line ends, a line starting with "."
    doubled, ending in ".\\r\\n"."""
    lines = article.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = []
    for line in lines:
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.startswith(b"."):
            line = b"." + line
        out.append(line + b"\r\n")
    out.append(b".\r\n")
    return b"".join(out)


def undot(lines: list[bytes]) -> bytes:
    """A multi-line block as read (without its terminating "."): CRLF lines, the leading
    "." of a stuffed line removed."""
    return b"".join((line[1:] if line.startswith(b"..") else line) + b"\r\n" for line in lines)


@dataclass(eq=False)
class NntpClient(NewsServer):
    """One NNTP reader session: connects on ``__enter__`` (greeting, MODE READER, AUTHINFO
    when ``user`` is set), QUIT on ``__exit__``."""

    host: str
    port: int = 119
    user: str = ""
    password: str = field(default="", repr=False)
    tls: bool = False
    timeout: float = 30.0
    _sock: socket.socket | None = field(default=None, init=False, repr=False)
    _file: io.BufferedRWPair | None = field(default=None, init=False, repr=False)
    can_post: bool = field(default=False, init=False)
    _authenticated: bool = field(default=False, init=False, repr=False)

    # -- the session ------------------------------------------------------------------

    def __enter__(self) -> NntpClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(self) -> None:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            if self.tls:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
        except ssl.SSLError as e:
            raise NewsError(f"TLS with the news server {self.where()} failed: {e}",
                            temporary=True) from e  # fmt: skip
        except OSError as e:
            raise NewsError(f"cannot connect to the news server {self.where()}: {e}",
                            temporary=True) from e  # fmt: skip
        self._sock = sock
        self._file = sock.makefile("rwb")
        try:
            code, text = self._reply()
            if code not in (200, 201):
                self._fail("greeting", code, text)
            self.can_post = code == 200
            code, text = self._command(b"MODE READER")
            if code == 480 and self.user:
                self._authenticate()
                code, text = self._command(b"MODE READER")
            if code in (200, 201):
                self.can_post = code == 200
            elif code != 502:  # 502: this server is a reader already, or never one
                self._fail("MODE READER", code, text)
            if self.user and not self._authenticated:
                self._authenticate()
        except BaseException:
            self._drop()
            raise

    def _authenticate(self) -> None:
        code, text = self._command(b"AUTHINFO USER " + self.user.encode())
        if code == 381:
            code, text = self._command(b"AUTHINFO PASS " + self.password.encode(), secret=True)
        if code != 281:
            self._fail(f"AUTHINFO for {self.user!r}", code, text)
        self._authenticated = True

    def close(self) -> None:
        if self._file is None:
            return
        with contextlib.suppress(NewsError):
            self._command(b"QUIT")
        self._drop()

    def _drop(self) -> None:
        for part in (self._file, self._sock):
            if part is not None:
                with contextlib.suppress(OSError):
                    part.close()
        self._file = None
        self._sock = None

    # -- commands ---------------------------------------------------------------------

    def post(self, article: bytes) -> None:
        """POST the article.  An article the server has already (INN's "441 435
        Duplicate", after a post whose answer was lost) counts as posted."""
        code, text = self._command(b"POST")
        if code != 340:
            self._fail("POST", code, text)
        self._send(dot_stuff(article))
        code, text = self._reply()
        if code == 240:
            return
        if code == 441 and "duplicate" in text.lower():
            return
        self._fail("POST", code, text)

    def group(self, name: str) -> GroupStatus:
        code, text = self._command(b"GROUP " + name.encode())
        if code != 211:
            self._fail(f"GROUP {name}", code, text)
        fields = text.split()
        try:
            count, first, last = int(fields[0]), int(fields[1]), int(fields[2])
        except (IndexError, ValueError):
            raise NewsError(f"GROUP {name}: a 211 reply without numbers: {text!r}",
                            temporary=True) from None  # fmt: skip
        return GroupStatus(count=count, first=first, last=last)

    def article(self, number: int) -> bytes | None:
        """The article (headers and body, CRLF line ends, un-stuffed), or None (423)."""
        code, text = self._command(b"ARTICLE %d" % number)
        if code == 423:
            return None
        if code != 220:
            self._fail(f"ARTICLE {number}", code, text)
        return undot(self._block())

    # -- the wire ---------------------------------------------------------------------

    def _fail(self, what: str, code: int, text: str) -> None:
        temporary = 400 <= code < 500 and code not in FINAL_4XX
        raise NewsError(f"{what}: the news server {self.where()} answered {code} {text}",
                        temporary=temporary)  # fmt: skip

    def _send(self, data: bytes) -> None:
        if self._file is None:
            raise NewsError(f"not connected to the news server {self.where()}", temporary=True)
        try:
            self._file.write(data)
            self._file.flush()
        except OSError as e:
            self._drop()
            raise NewsError(f"lost the news server {self.where()}: {e}", temporary=True) from e

    def _command(self, line: bytes, secret: bool = False) -> tuple[int, str]:
        if b"\r" in line or b"\n" in line:
            raise NewsError(f"a line break in an NNTP command: {line[:40]!r}", temporary=False)
        self._send(line + b"\r\n")
        return self._reply()

    def _line(self) -> bytes:
        if self._file is None:
            raise NewsError(f"not connected to the news server {self.where()}", temporary=True)
        try:
            line = self._file.readline(MAX_LINE)
        except OSError as e:
            self._drop()
            raise NewsError(f"lost the news server {self.where()}: {e}", temporary=True) from e
        if not line:
            self._drop()
            raise NewsError(f"the news server {self.where()} closed the connection",
                            temporary=True)  # fmt: skip
        return line.rstrip(b"\r\n")

    def _reply(self) -> tuple[int, str]:
        line = self._line()
        try:
            code = int(line[:3])
        except ValueError:
            raise NewsError(f"the news server {self.where()} answered {line[:80]!r}",
                            temporary=True) from None  # fmt: skip
        return code, line[4:].decode("utf-8", "replace")

    def _block(self) -> list[bytes]:
        lines: list[bytes] = []
        while True:
            line = self._line()
            if line == b".":
                return lines
            lines.append(line)
