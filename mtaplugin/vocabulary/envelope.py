"""The envelope and the post as the front ends hand them to the engine."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.errors import HeaderParseError
from email.header import decode_header, make_header
from email.message import Message
from functools import cached_property
from itertools import islice

from mtaplugin.vocabulary.addresses import header_addresses
from mtaplugin.vocabulary.draft import Draft
from mtaplugin.vocabulary.header_block import content_kind, header_end, parse_header_block


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
        # the header block as the MTA reads it (see parse_header_block)
        return Draft.from_bytes(self.raw, self.headers, self.body_start).tree()

    def first_text_lines(self, limit: int) -> list[str]:
        """The first ``limit`` non-blank lines of the first text/plain part."""
        value = self.get("Content-Type")
        ctype = value.lower()
        cte = self.get("Content-Transfer-Encoding").strip().lower()
        if (not ctype or ctype.startswith("text/plain")) and cte in {"", "7bit", "8bit"}:
            # The common case, without parsing: read the start of the body as it is (the
            # charset of an ASCII value as the header block's parser reads it, kept).
            charset = (
                content_kind(value)[1] if value.isascii() else self.headers.get_content_charset()
            )
            start = self.body_start
            chunk = self.raw[start : start + 200 * max(limit, 1)]
            lines = _decode(chunk, charset).splitlines()
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
        nonblank = (line for line in lines if line.strip())
        # (the first ``limit`` ones: the lines after them are not looked at)
        return list(islice(nonblank, limit)) if limit >= 0 else [*nonblank][:limit]
