"""A message's header block read as the MTA reads it: where it ends (:func:`header_end`),
its fields (:func:`parse_header_block`), and the raw bytes without some fields
(:func:`strip_headers`); what a Content-Type value says (:func:`content_kind`)."""

from __future__ import annotations

import functools
import re
from email.message import Message
from email.policy import compat32

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


#: a Content-Type value longer than this is read each time (not kept)
_KEPT_TYPE = 200


@functools.lru_cache(maxsize=256)
def _read_kind(value: str) -> tuple[str, str | None]:
    holder = Message(policy=compat32)
    if value:
        holder["Content-Type"] = value
    return holder.get_content_type(), holder.get_content_charset()


def content_kind(value: str) -> tuple[str, str | None]:
    """(the content type, its charset or None) of a Content-Type value, as the email
    package reads them; each usual value read once (most posts say one of a few, and the
    email package takes longer to read one than a rule takes to look at the post)."""
    if len(value) > _KEPT_TYPE:
        return _read_kind.__wrapped__(value)
    return _read_kind(value)
