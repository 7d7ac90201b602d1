"""What the archive reads from a post: pure, and never raising on broken mail.

Text: the text/plain parts decoded with their charset (an unknown or wrong charset is read
as UTF-8 with replacement characters, then Latin-1); an HTML part becomes text
(:mod:`~mtaplugin.archive.html_text`) unless a text/plain alternative of it exists.
Attachments: every other leaf part, and any part that names a file, with its name, type,
decoded size and its index among the message's parts (``part``, as
``Message.walk()`` counts them, so a page can serve it).  Date: the post's ``Date:``, or
the archive time when there is none or it is absurd (before 1980 or more than a day ahead
of the archive time: a wrong clock would put the post at the top or bottom of the archive
for ever).
"""

from __future__ import annotations

import codecs
import contextlib
import email
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email import policy as email_policy
from email.header import decode_header, make_header
from email.message import Message
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

from mtaplugin.archive.hashing import content_message_id, message_id_hash
from mtaplugin.archive.html_text import html_to_text
from mtaplugin.vocabulary.header_block import header_end

#: header fields kept for the pages (decoded)
_MSGID = re.compile(r"<[^<>\s]+>")
_EARLIEST = datetime(1980, 1, 1, tzinfo=UTC)


@dataclass
class Reading:
    message_id: str
    message_id_hash: str
    in_reply_to: str = ""
    references: list[str] = field(default_factory=list)
    sender: str = ""
    sender_name: str = ""
    subject: str = ""
    date: datetime | None = None
    text: str = ""
    attachments: list[dict[str, Any]] = field(default_factory=list)


def parse(raw: bytes) -> Message:
    return email.message_from_bytes(raw, policy=email_policy.compat32)


def parse_post(raw: bytes) -> Message:
    """``raw`` as :func:`parse` reads it, for less: the body of a post that is not
    multipart (nor ``message/*``) is what the parser would make its payload -- its lines
    read one by one and joined again, as they were -- so only the header block is parsed,
    and the body set as it is.  Any other post, or a header block the parser would not
    end exactly at its blank line, is parsed whole."""
    end = header_end(raw)
    head = raw[:end]
    if not head.endswith((b"\n\n", b"\r\n\r\n")):
        return parse(raw)
    msg = parse(head)
    if msg.defects or msg.get_payload() or msg.get_content_maintype() in ("multipart", "message"):
        return parse(raw)
    msg.set_payload(raw[end:].decode("ascii", "surrogateescape"))
    return msg


def decoded(value: object) -> str:
    """A header's value as text (RFC 2047 words decoded; broken ones kept as they are)."""
    if value is None:
        return ""
    text = str(value)
    if "=?" in text:  # (without, decode_header finds no encoded word: the text as it is)
        with contextlib.suppress(Exception):
            text = str(make_header(decode_header(text)))
    return " ".join(text.split())


def no_archive(msg: Message) -> bool:
    """The poster asked not to be archived: ``X-No-Archive: yes`` or ``Archive: no``."""
    if decoded(msg.get("X-No-Archive")).lower().startswith("yes"):
        return True
    return decoded(msg.get("Archive")).lower().startswith("no")


def message_ids(value: str) -> list[str]:
    """The ``<…>`` Message-IDs of a References/In-Reply-To value, in order, once each."""
    found: list[str] = []
    for mid in _MSGID.findall(value or ""):
        if mid not in found:
            found.append(mid)
    return found


def canonical_id(value: str) -> str:
    """A Message-ID as stored: ``<id>``."""
    ids = message_ids(value)
    if ids:
        return ids[0]
    bare = value.strip().strip("<>").strip()
    return f"<{bare}>" if bare else ""


def post_date(msg: Message, now: datetime, fallback: datetime | None = None) -> datetime:
    """The post's date; ``fallback`` (default: ``now``) when it has none or an absurd one."""
    fallback = fallback or now
    try:
        when = parsedate_to_datetime(decoded(msg.get("Date")))
    except Exception:
        return fallback
    if when is None:
        return fallback
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    when = when.astimezone(UTC)
    if when < _EARLIEST or when > now + timedelta(days=1):
        return fallback
    return when


def charset_of(part: Message) -> str:
    name = part.get_content_charset() or "us-ascii"
    try:
        return codecs.lookup(name).name
    except (LookupError, ValueError):
        return "utf-8"


def part_text(part: Message) -> str:
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if not isinstance(payload, bytes):
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    charset = charset_of(part)
    try:
        return payload.decode(charset)
    except (UnicodeDecodeError, LookupError):
        pass
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return payload.decode("latin-1")


def _size(part: Message) -> int:
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    return len(payload) if isinstance(payload, bytes) else 0


def _filename(part: Message) -> str:
    try:
        return decoded(part.get_filename() or "")
    except Exception:
        return ""


def _has_plain_sibling(parents: list[Message]) -> bool:
    for parent in parents:
        if parent.get_content_type() == "multipart/alternative":
            subparts = parent.get_payload()
            if isinstance(subparts, list) and any(
                isinstance(p, Message) and p.get_content_type() == "text/plain" for p in subparts
            ):
                return True
    return False


def body_and_attachments(msg: Message) -> tuple[str, list[dict[str, Any]]]:
    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    index = 0

    def visit(part: Message, parents: list[Message]) -> None:
        nonlocal index
        here = index
        index += 1
        ctype = part.get_content_type()
        if part.is_multipart():
            subparts = part.get_payload()
            for sub in subparts if isinstance(subparts, list) else []:
                if isinstance(sub, Message):
                    visit(sub, [*parents, part])
            return
        name = _filename(part)
        disposition = (part.get("Content-Disposition") or "").split(";")[0].strip().lower()
        if not name and disposition != "attachment":
            if ctype == "text/plain":
                texts.append(part_text(part))
                return
            if ctype == "text/html":
                if not _has_plain_sibling(parents):
                    texts.append(html_to_text(part_text(part)))
                return
            if ctype == "message/rfc822":
                return
        attachments.append({"name": name, "content_type": ctype, "size": _size(part), "part": here})

    visit(msg, [])
    return "\n".join(t.rstrip("\n") + "\n" for t in texts if t.strip()), attachments


def read(
    raw: bytes, now: datetime, host: str = "", date_fallback: datetime | None = None
) -> Reading:
    """Everything the archive keeps of ``raw`` besides the bytes themselves (``now``: the
    archive time; ``date_fallback``: the date of a post with no sensible Date:, default
    ``now``)."""
    msg = parse_post(raw)
    message_id = canonical_id(decoded(msg.get("Message-ID")))
    if not message_id:
        end = header_end(raw)
        fields = [(k, decoded(v)) for k, v in msg.items()]
        message_id = content_message_id(fields, raw[end:], host)
    refs = message_ids(decoded(msg.get("References")))
    irt = message_ids(decoded(msg.get("In-Reply-To")))
    name, address = "", ""
    pairs = getaddresses([decoded(msg.get("From"))])
    if pairs:
        name, address = pairs[0]
    try:
        text, attachments = body_and_attachments(msg)
    except Exception:  # a part no reader understands: keep what the bytes say
        text, attachments = raw.decode("utf-8", "replace"), []
    return Reading(
        message_id=message_id,
        message_id_hash=message_id_hash(message_id),
        in_reply_to=irt[0] if irt else "",
        references=[r for r in refs if r != message_id],
        sender=address.strip().lower()[:320],
        sender_name=name.strip()[:320],
        subject=decoded(msg.get("Subject")),
        date=post_date(msg, now, date_fallback),
        text=text,
        attachments=attachments,
    )
