"""What an article from the linked newsgroup is to the list: malformed (logged and
skipped), one of the list's own posts coming back (a loop, skipped), or a post, rewritten
as Mailman 2.1's ``gate_news`` did: ``To:`` becomes ``X-Originally-To:`` and the list's
posting address is the new ``To:``, and the news server's trace headers are dropped.

Pure code: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtaplugin.i18n import _
from mtaplugin.model import MailingList
from mtaplugin.vocabulary.envelope import Post

#: a header field's first line (RFC 5322 §2.2: printable ASCII but the colon, then ":")
_FIELD = re.compile(rb"^[!-9;-~]+:")
#: the news server's trace and transport headers (RFC 5536 / 5537), not the members' business
_TRACE = frozenset(
    name.lower()
    for name in (
        "Path",
        "Xref",
        "Injection-Info",
        "Injection-Date",
        "NNTP-Posting-Host",
        "NNTP-Posting-Date",
        "X-Trace",
        "X-Complaints-To",
    )
)
_MAILTO = re.compile(r"<\s*mailto:([^>?\s]+)", re.IGNORECASE)
_ANGLE = re.compile(r"<([^<>]+)>")


@dataclass(frozen=True)
class Skip:
    """The article is not gated; ``why`` is for the log."""

    why: str
    #: a malformed article (logged as a warning), not a loop (logged at info)
    malformed: bool


def split(raw: bytes) -> tuple[list[bytes], bytes] | None:
    """(the header lines, unfolded lines kept apart, and the body), or None when the
    header section is not one (no header first, a line that is neither a field nor a
    continuation)."""
    text = raw.replace(b"\r\n", b"\n")
    head, _sep, body = text.partition(b"\n\n")
    lines = head.split(b"\n") if head else []
    if not lines or not _FIELD.match(lines[0]):
        return None
    fields: list[bytes] = []
    for line in lines:
        if line[:1] in (b" ", b"\t"):
            fields[-1] += b"\n" + line
        elif _FIELD.match(line):
            fields.append(line)
        elif line == b"":
            continue
        else:
            return None
    return fields, body


def _name(field: bytes) -> str:
    return field.split(b":", 1)[0].decode("ascii").lower()


def is_ours(post: Post, mlist: MailingList) -> bool:
    """The article is one of the list's own copies: it carries the ``List-Id:`` our copies
    carry, an ``X-BeenThere:`` (Mailman's mark) or a ``List-Post:`` naming the list."""
    list_id = mlist.list_id.lower()
    address = mlist.fqdn_listname.lower()
    for value in post.get_all("List-Id"):
        if any(found.strip().lower() == list_id for found in _ANGLE.findall(value)):
            return True
    for value in post.get_all("X-BeenThere"):
        if value.strip().strip("<>").lower() == address:
            return True
    for value in post.get_all("List-Post"):
        if any(found.lower() == address for found in _MAILTO.findall(value)):
            return True
    return False


def inspect(raw: bytes, mlist: MailingList) -> bytes | Skip:
    """The article as a post to ``mlist``, or why it is not one."""
    parts = split(raw)
    if parts is None:
        return Skip(_("malformed header section"), malformed=True)
    fields, body = parts
    try:
        names = [_name(f) for f in fields]
    except UnicodeDecodeError:
        return Skip(_("malformed header section"), malformed=True)
    post = Post(raw)
    if not post.from_address:
        return Skip(_("no From: address"), malformed=True)
    if is_ours(post, mlist):
        return Skip(_("it came from the list itself"), malformed=False)
    kept: list[bytes] = []
    for name, field in zip(names, fields, strict=True):
        if name in _TRACE or name == "x-originally-to":
            continue
        if name == "to":
            field = b"X-Originally-To:" + field.split(b":", 1)[1]
        kept.append(field)
    kept.append(b"To: " + mlist.fqdn_listname.encode("ascii"))
    head = b"\r\n".join(f.replace(b"\n", b"\r\n") for f in kept)
    return head + b"\r\n\r\n" + body.replace(b"\n", b"\r\n")
