"""The envelope and the post as the front ends hand them to the engine."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.errors import HeaderParseError
from email.header import decode_header, make_header
from email.message import Message
from email.policy import compat32
from functools import cached_property

from mtaplugin.vocabulary.addresses import header_addresses


@dataclass
class Envelope:
    """What the SMTP dialogue told us about one transaction."""

    mail_from: str = ""
    #: recipients exactly as the MTA gave them (Postfix: with angle brackets)
    recipients: list[str] = field(default_factory=list)
    client_address: str = ""
    client_name: str = ""
    helo: str = ""
    #: SASL login name, if the client authenticated
    auth_user: str = ""
    queue_id: str = ""
    #: the newsgroup an article was gated from (set only by the Usenet gateway,
    #: :mod:`mtaplugin.frontends.news`; never from SMTP)
    gated_from: str = ""
    #: how many ``Received:`` fields the receiving MTA itself put on top of the post
    #: before mtaplugin saw it: 0 for a milter (Postfix and Sendmail never show it their
    #: own), 1 for Exim's ACL and for the front ends after the queue (LMTP, the pipe).
    #: Authentication-Results are believed only above the first Received: after those
    #: (:func:`mtaplugin.mailauth.results.topmost`)
    local_received: int = 0

    def as_record(self) -> dict[str, object]:
        return {
            "mail_from": self.mail_from,
            "recipients": list(self.recipients),
            "client_address": self.client_address,
            "client_name": self.client_name,
            "helo": self.helo,
            "auth_user": self.auth_user,
            "queue_id": self.queue_id,
            "gated_from": self.gated_from,
        }


_FOLD = re.compile(r"\r?\n(?=[ \t])")


#: a header field's first line, as the MTA reads it: a name (printable ASCII but the
#: colon), maybe blanks, a colon
_FIELD_START = re.compile(rb"[\x21-\x39\x3b-\x7e]+[ \t]*:")
_FIELD_START_TEXT = re.compile(_FIELD_START.pattern.decode())


def _blank_line(raw: bytes) -> tuple[int, int]:
    """(where the first blank line starts, where it ends); (len, len) when there is none."""
    crlf = raw.find(b"\r\n\r\n")
    # Look for a bare-LF blank line only before the CRLF one: a big body is scanned once.
    lf = raw.find(b"\n\n", 0, crlf if crlf >= 0 else len(raw))
    if lf >= 0:
        return lf + 1, lf + 2
    if crlf >= 0:
        return crlf + 2, crlf + 4
    return len(raw), len(raw)


def _stray_line(raw: bytes, blank: int) -> int:
    """Where the first line before ``blank`` that is neither a field nor a field's
    continuation starts (``blank`` if none).  Postfix and Exim end the header block at
    such a line and deliver it as the body's first line."""
    start = 0
    while start < blank:
        if not (
            _FIELD_START.match(raw, start)
            or (start > 0 and raw[start : start + 1] in (b" ", b"\t"))
            or (start == 0 and raw.startswith(b"From "))  # an mbox separator
        ):
            return start
        nl = raw.find(b"\n", start, blank)
        start = blank if nl < 0 else nl + 1
    return blank


def header_end(raw: bytes) -> int:
    """The offset just past the blank line that ends the header block (len(raw) if none),
    or where the first line that is not a header field starts (the body starts there
    then, as the MTA reads it)."""
    if raw.startswith((b"\r\n", b"\n")):
        return raw.index(b"\n") + 1  # no header fields: the body follows the blank line
    blank, end = _blank_line(raw)
    stray = _stray_line(raw, blank)
    return end if stray == blank else stray


def parse_header_block(block: bytes) -> Message:
    """A header block parsed as the MTA reads it, into compat32 values (a folded value
    keeps its line ends, 8-bit bytes are surrogate escapes).

    Python's parser differs from Postfix and Exim where a post can exploit it: it ends a
    line at a bare CR, and ends the header block at a line like ``Subject : x``.  A field
    the MTA delivers would then escape every rule (``From: a@example.com<CR>junk<CRLF>
    X-Bad: ...``).  Here a line ends at LF only, and the block ends at the blank line or
    at the first line that is not a field (see :func:`header_end`)."""
    msg = Message(policy=compat32)
    fields: list[list[str]] = []
    for n, line in enumerate(block.decode("ascii", "surrogateescape").split("\n")):
        if not line.strip("\r"):
            break  # the blank line
        if n == 0 and line.startswith("From ") and not _FIELD_START_TEXT.match(line):
            msg.set_unixfrom(line.rstrip("\r"))
        elif line[:1] in (" ", "\t") and fields:
            fields[-1].append(line)
        elif _FIELD_START_TEXT.match(line):
            fields.append([line])
        else:
            break
    for lines in fields:
        name, value = "\n".join(lines).split(":", 1)
        # as compat32: no blanks before the value, no line end after it
        msg.set_raw(name.rstrip(" \t"), value.lstrip(" \t").rstrip("\r\n"))
    return msg


def strip_headers(raw: bytes, names: tuple[str, ...] | list[str]) -> bytes:
    """``raw`` without any occurrence of the named headers (with their folded lines);
    the body and every other byte are left as they are."""
    if not names:
        return raw
    wanted = {n.lower().encode() for n in names}
    end = header_end(raw)
    kept: list[bytes] = []
    dropping = False
    for line in raw[:end].splitlines(keepends=True):
        if line[:1] in (b" ", b"\t") and line.strip():
            if not dropping:
                kept.append(line)
            continue
        name = line.split(b":", 1)[0].strip().lower() if b":" in line else b""
        dropping = name in wanted
        if not dropping:
            kept.append(line)
    return b"".join(kept) + raw[end:]


def _decode(data: bytes, charset: str | None) -> str:
    """Text in the declared charset; UTF-8 when there is none or Python does not know it."""
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


def _utf8(value: str) -> str:
    """A header value whose 8-bit bytes were read as surrogate escapes, as the UTF-8 text
    RFC 6532 lets a header carry (``jürgen@example.com``), so that it compares equal to
    the same address typed anywhere else (a ban, a member); unchanged when not UTF-8."""
    try:
        return value.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeError:
        return value


class Post:
    """A message: its raw bytes and its parsed headers (the body is parsed only on demand)."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        # Only the header block goes through the parser: the rules read headers, and a
        # 10 MB attachment should cost nothing to decide on.
        #: where the body starts (:func:`header_end`)
        self.body_start = header_end(raw)
        self.headers: Message = parse_header_block(raw[: self.body_start])
        self._named: dict[tuple[str, ...], list[tuple[str, str]]] = {}
        self._values: dict[str, list[str]] | None = None

    @property
    def size(self) -> int:
        return len(self.raw)

    def get(self, name: str, default: str = "") -> str:
        values = self.get_all(name)
        return values[0] if values else default

    def get_all(self, name: str) -> list[str]:
        """Every value of header ``name`` (as ``str(headers.get_all(name))``), read once
        per post and name: the rules ask for the same fields again and again."""
        if self._values is None:
            # every field in one pass (each get_all of the parser scans them all)
            self._values = {}
            for k, v in self.headers.items():
                self._values.setdefault(k.lower(), []).append(str(v))
        return list(self._values.get(name.lower(), ()))

    def named(self, *names: str) -> list[tuple[str, str]]:
        """(display name, address) of every address in the header fields ``names``, as
        :func:`email.utils.getaddresses` reads their values together; parsed once per post
        (several rules and the audience ask)."""
        found = self._named.get(names)
        if found is None:
            values = [v for name in names for v in self.get_all(name)]
            found = self._named[names] = header_addresses(values)
        return found

    @cached_property
    def from_address(self) -> str:
        """The first From: address, lower-cased ("" if none)."""
        # raw_items: the values as read (8-bit bytes as surrogate escapes); get_all would
        # turn an 8-bit value into a Header object whose str() has lost the bytes
        raw = [str(v) for k, v in self.headers.raw_items() if k.lower() == "from"]
        pairs = header_addresses([_utf8(v) for v in raw])
        for _name, addr in pairs:
            if "@" in addr:
                return addr.lower()
        return ""

    @cached_property
    def subject(self) -> str:
        raw = _FOLD.sub("", self.get("Subject"))  # RFC 5322 unfolding
        if "=?" not in raw:
            return raw  # no encoded word: what make_header(decode_header()) gives
        try:
            return str(make_header(decode_header(raw)))
        except (UnicodeDecodeError, LookupError, ValueError, HeaderParseError):
            return raw  # (HeaderParseError: an encoded word's base64 is broken)

    @property
    def message_id(self) -> str:
        return self.get("Message-ID").strip()

    @cached_property
    def message(self) -> Message:
        """The whole message, parsed (only when a rule needs the body)."""
        from mtaplugin.vocabulary.draft import Draft

        # the header block as the MTA reads it (see parse_header_block)
        return Draft.from_bytes(self.raw, self.headers, self.body_start).tree()

    def first_text_lines(self, limit: int) -> list[str]:
        """The first ``limit`` non-blank lines of the first text/plain part."""
        ctype = self.get("Content-Type").lower()
        cte = self.get("Content-Transfer-Encoding").strip().lower()
        if (not ctype or ctype.startswith("text/plain")) and cte in {"", "7bit", "8bit"}:
            # The common case, without parsing: read the start of the body as it is.
            start = self.body_start
            chunk = self.raw[start : start + 200 * max(limit, 1)]
            lines = _decode(chunk, self.headers.get_content_charset()).splitlines()
            if len(chunk) == 200 * max(limit, 1):
                lines = lines[:-1]  # the last one may be cut
        else:
            part = next(
                (p for p in self.message.walk() if p.get_content_type() == "text/plain"), None
            )
            if part is None:
                return []
            payload = part.get_payload(decode=True)
            if not isinstance(payload, bytes):
                return []
            lines = _decode(payload, part.get_content_charset()).splitlines()
        return [line for line in lines if line.strip()][:limit]
