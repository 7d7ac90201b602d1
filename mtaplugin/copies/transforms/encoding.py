"""Header text in and out: RFC 2047 decoding and encoding, folding."""

from __future__ import annotations

import re
from email.errors import HeaderParseError
from email.header import Header, decode_header, make_header

_FOLD = re.compile(r"\r?\n(?=[ \t])")
_SURROGATE = re.compile("[\ud800-\udfff]")


def unfold(value: str) -> str:
    return _FOLD.sub("", value) if "\n" in value else value


def decode_text(value: str) -> str:
    """A header value as text: unfolded, encoded words decoded; 8-bit bytes read as UTF-8."""
    raw = unfold(value)
    ascii_only = raw.isascii()  # (the usual subject: no escape, no surrogate to replace)
    if not ascii_only and any("\udc80" <= c <= "\udcff" for c in raw):  # raw 8-bit bytes
        data = raw.encode("ascii", "surrogateescape")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data.decode("latin-1")
    if "=?" not in raw:  # no encoded word: decode_header keeps it
        return raw if ascii_only else _SURROGATE.sub("\ufffd", raw)
    try:
        text = str(make_header(decode_header(raw)))
    except (UnicodeDecodeError, LookupError, ValueError, AssertionError, HeaderParseError):
        return raw  # (HeaderParseError: an encoded word's base64 is broken)
    # A UTF-7 (or UTF-16) encoded word can decode to a lone surrogate, which no charset
    # can encode again: it becomes U+FFFD.
    return _SURROGATE.sub("\ufffd", text)


def encode_text(text: str, name: str) -> str:
    """``text`` as the value of header ``name``: ASCII stays as it is (folded when long),
    anything else becomes UTF-8 encoded words."""
    if text.isascii() and text.isprintable() and len(name) + 2 + len(text) <= 78:
        return text  # what Header(...).encode() gives a short printable ASCII line
    if text.isascii():
        return Header(text, "us-ascii", header_name=name).encode(linesep="\r\n")
    return Header(text, "utf-8", header_name=name).encode(linesep="\r\n")
