"""``Approved:`` as the first line of the body (Mailman 2.1 and 3).

A poster whose mail program cannot add a header writes the approval as the first
non-blank line of the post's text: ``Approved: <password>`` (or ``Approve:``,
``X-Approved:``, ``X-Approve:``).  Mailman reads it there when the post has no approval
header, and removes the line before the members get the post, wherever it comes:

- in a text/plain post;
- in the first text/plain part of a multipart post, and the same words from its other
  text parts (the HTML of a ``multipart/alternative``), so that the password does not
  travel in either.

:func:`body_value` is what the ``approved`` and ``moderator-password`` rules read (the
value then goes through the same one-check-per-post budget as a header's,
:mod:`mtaplugin.posting.moderator_password`); :func:`strip` is what the members' and the
archive's copies lose (:mod:`mtaplugin.copies.transforms.cleanse`).  Both look at the same
place in the same way, so a line that could approve is a line that is removed.

A multipart post's MIME tree is built only when its body may hold such a line as plain
text, quoted-printable or a base64 text/plain part: a post with a large attachment and no
approval line costs a scan of its bytes, not a parse.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from email.message import Message
from email.policy import compat32
from typing import TYPE_CHECKING

from mtaplugin.posting.transfer import decode_body, encode_body
from mtaplugin.vocabulary.header_block import content_kind

if TYPE_CHECKING:
    from mtaplugin.vocabulary.draft import Draft

#: the approval fields, as headers or as the first body line
HEADERS = ("Approved", "Approve", "X-Approved", "X-Approve")
_NAMES = frozenset(h.lower() for h in HEADERS)

#: blank lines, then ``Name: value`` on the first line that is not blank
_LINE = re.compile(
    rb"\A(?P<blank>(?:[ \t]*\r?\n)*)[ \t]*(?P<name>[!-9;-~]+)[ \t]*:(?P<value>[^\r\n]*)(?:\r?\n|\Z)"
)
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")


def _worth_parsing(body: bytes) -> bool:
    """Whether a multipart body may hold the line where only its tree can show it: the
    word in plain text (7bit, 8bit, quoted-printable), or a base64 text/plain part.  A scan
    of the bytes (a regular expression over a large attachment costs as much as a parse)."""
    lowered = body.lower()
    if b"approve" in lowered:
        return True
    start = lowered.find(b"text/plain")
    while start >= 0:
        # the part's header block: from the blank line before it (or the start), a false
        # "yes" costs only a parse
        head_start = max(lowered.rfind(b"\n\n", 0, start), lowered.rfind(b"\n\r\n", 0, start), 0)
        blank = _BLANK_LINE.search(lowered, start)
        head_end = blank.start() if blank else len(lowered)
        if b"base64" in lowered[head_start:head_end]:
            return True
        start = lowered.find(b"text/plain", head_end)
    return False


@dataclass
class _Found:
    part: Message | None  # None: the post itself is the text/plain (no tree built)
    data: bytes  # the decoded text
    match: re.Match[bytes]
    charset: str


def _holder(content_type: str) -> Message:
    holder = Message(policy=compat32)
    if content_type:
        holder["Content-Type"] = content_type
    return holder


def _match(data: bytes) -> re.Match[bytes] | None:
    found = _LINE.match(data)
    if found is None or found["name"].decode("ascii").lower() not in _NAMES:
        return None
    return found


def _cte(value: object) -> str:
    return str(value or "").strip().lower()


def _locate(
    fields: Iterable[tuple[str, str]], body: bytes, tree: Callable[[], Message]
) -> _Found | None:
    fields = list(fields)
    if any(name.lower() in _NAMES and str(value).strip() for name, value in fields):
        return None  # an approval header: the body is not read (Mailman's order)
    head = {name.lower(): str(value) for name, value in reversed(fields)}
    # (the rules and the copy both look, for every post: the value is read once)
    content_type, charset = content_kind(head.get("content-type", ""))
    if content_type == "text/plain":
        data = decode_body(body, _cte(head.get("content-transfer-encoding")))
        found = _match(data) if data is not None else None
        if found is None or data is None:
            return None
        return _Found(None, data, found, charset or "utf-8")
    if not content_type.startswith("multipart/"):
        return None
    if not _worth_parsing(body):
        return None
    part = next((p for p in tree().walk() if p.get_content_type() == "text/plain"), None)
    if part is None:
        return None
    payload = part.get_payload(decode=True)
    found = _match(payload) if isinstance(payload, bytes) else None
    if found is None or not isinstance(payload, bytes):
        return None
    return _Found(part, payload, found, part.get_content_charset() or "utf-8")


def _text(data: bytes, charset: str) -> str:
    try:
        return data.decode(charset, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


def body_value(fields: Iterable[tuple[str, str]], body: bytes, tree: Callable[[], Message]) -> str:
    """The password on the post's first body line ("" when there is none, or when the
    post has an approval header)."""
    found = _locate(fields, body, functools.cache(tree))
    return _text(found.match["value"], found.charset).strip() if found else ""


def _set_payload(part: Message, data: bytes) -> None:
    cte = _cte(part.get("Content-Transfer-Encoding"))
    encoded, new_cte = encode_body(data, cte)
    part.set_payload(encoded.decode("ascii", "surrogateescape"))
    if new_cte != cte:
        del part["Content-Transfer-Encoding"]
        part["Content-Transfer-Encoding"] = new_cte


def _words(found: _Found) -> re.Pattern[str]:
    """The approval line as it may appear in another text part (HTML tags and blanks
    between its words)."""
    name = _text(found.match["name"], found.charset)
    value = _text(found.match["value"], found.charset).strip()
    gap = r"(?:\s|&nbsp;|<[^>]*>)*"
    return re.compile(re.escape(name) + gap + ":" + gap + re.escape(value), re.IGNORECASE)


def strip(draft: Draft) -> None:
    """Remove the approval line from ``draft`` (nothing when it has none, or has an
    approval header: Mailman reads the body only without one)."""
    tree = functools.cache(draft.tree)
    found = _locate(draft.original or draft.fields, draft.body, tree)
    if found is None:
        return
    match = found.match
    data = found.data[: match.start()] + match["blank"] + found.data[match.end() :]
    if found.part is None:
        cte = _cte(draft.get("Content-Transfer-Encoding"))
        body, new_cte = encode_body(data, cte)
        if new_cte != cte:
            draft.set("Content-Transfer-Encoding", new_cte)
        draft.set_body(body)
        return
    _set_payload(found.part, data)
    words = _words(found)
    msg = tree()
    for part in msg.walk():
        if part is found.part or part.get_content_maintype() != "text":
            continue
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            continue
        charset = part.get_content_charset() or "utf-8"
        text = _text(payload, charset)
        cleaned = words.sub("", text, count=1)
        if cleaned != text:
            try:
                _set_payload(part, cleaned.encode(charset))
            except (LookupError, UnicodeEncodeError):
                _set_payload(part, b"")
    draft.set_tree(msg)
