"""List to news: the article a list post becomes for its linked newsgroup, cleansed as
Mailman 2.1's NewsRunner did (``prepare_message``), so that an NNTP server such as INN
takes it.

* headers a news server refuses from a reader or that tell where the mail went:
  :data:`REMOVED` (Mailman's ``NNTP_REMOVE_HEADERS``, and ``Path``, ``Injection-*``);
* a second ``To:``, ``Cc:``, ``Content-Transfer-Encoding:`` or ``MIME-Version:`` is renamed
  ``X-Original-...`` (Mailman's ``NNTP_REWRITE_DUPLICATE_HEADERS``): INN refuses duplicates;
* ``Newsgroups:`` gets the linked group (kept groups the poster named);
* ``Message-ID:`` is kept, so news readers thread replies with the list's;
* the list's subject prefix only with ``nntp_prefix_subject_too``;
* ``Lines:`` counted anew (the archive copy's body);
* ``Approved:`` is removed (a poster cannot approve for a moderated group) and, for a list
  whose group is moderated (``newsgroup_moderation`` open_moderated or moderated), set to
  the list's posting address (:func:`mtaplugin.news.moderation.approved_by`), whoever let
  the post through (the rules or a moderator): the post passed the list's moderation, so
  the server must not send it to the group's moderator.

Pure: bytes in, bytes out; the body is not touched.
"""

from __future__ import annotations

import re

from mtaplugin.copies.transforms.encoding import decode_text, encode_text
from mtaplugin.copies.transforms.headers import _prefix_pattern
from mtaplugin.model import MailingList
from mtaplugin.news.moderation import approved_by

REMOVED = frozenset(
    {
        "nntp-posting-host", "nntp-posting-date", "x-trace", "x-complaints-to", "xref",
        "date-received", "posted", "posting-version", "relay-version", "received",
        "path", "injection-info", "injection-date", "lines", "approved",
    }
)  # fmt: skip
RENAMED_DUPLICATES = {
    "to": "X-Original-To",
    "cc": "X-Original-Cc",
    "content-transfer-encoding": "X-Original-Content-Transfer-Encoding",
    "mime-version": "X-MIME-Version",
}
_FIELD = re.compile(rb"^([!-9;-~]+)[ \t]*:")


def gateways(mlist: MailingList) -> bool:
    """The list sends its posts to a newsgroup."""
    return bool(mlist.gateway_to_news and mlist.linked_newsgroup.strip())


def split(raw: bytes) -> tuple[list[tuple[str, bytes]], bytes]:
    """The header fields as (lower-case name, the field's lines with their line ends) and
    the body (after the empty line)."""
    lines = raw.splitlines(keepends=True)
    fields: list[tuple[str, bytes]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line in (b"\r\n", b"\n"):
            i += 1
            break
        if line[:1] in (b" ", b"\t") and fields:
            name, text = fields[-1]
            fields[-1] = (name, text + line)
        else:
            m = _FIELD.match(line)
            if m is None:  # not a header: the body starts here (no empty line)
                break
            fields.append((m.group(1).decode("ascii").lower(), line))
        i += 1
    return fields, b"".join(lines[i:])


def _value(field: bytes) -> str:
    return field.split(b":", 1)[1].decode("utf-8", "surrogateescape").strip()


def _line(name: str, value: str) -> bytes:
    return f"{name}: {value}\r\n".encode("utf-8", "surrogateescape")


def unprefixed(prefix: str, subject: str) -> str:
    """The subject without the list's prefix (``[team 12] Re: x`` -> ``Re: x``)."""
    text = " ".join(subject.split())
    prefix = prefix.strip()
    pattern = _prefix_pattern(prefix) if prefix else None
    m = pattern.match_at_start(text) if pattern is not None else None
    if m:
        text = text[m.end() :].strip()
    return text


def article_for(mlist: MailingList, raw: bytes) -> bytes:
    """The article for ``mlist.linked_newsgroup`` made of ``raw`` (the post's archive
    copy), CRLF line ends."""
    fields, body = split(raw)
    group = mlist.linked_newsgroup.strip()
    out: list[bytes] = []
    seen: set[str] = set()
    groups: list[str] = []
    for name, text in fields:
        if name in REMOVED:
            continue
        if name == "newsgroups":
            groups += [g.strip() for g in _value(text).split(",") if g.strip()]
            continue
        if name == "subject" and not mlist.nntp_prefix_subject_too:
            subject = unprefixed(mlist.subject_prefix, decode_text(_value(text)))
            out.append(_line("Subject", encode_text(subject, "Subject")))
            continue
        if name in RENAMED_DUPLICATES and name in seen:
            out.append(_line(RENAMED_DUPLICATES[name], _value(text)))
            continue
        seen.add(name)
        out.append(b"".join(line + b"\r\n" for line in text.splitlines()))
    if group not in groups:
        groups.append(group)
    out.append(_line("Newsgroups", ",".join(groups)))
    approved = approved_by(mlist)
    if approved is not None:
        out.append(_line("Approved", approved))
    body_lines = body.splitlines()
    out.append(_line("Lines", str(len(body_lines))))
    return b"".join(out) + b"\r\n" + b"".join(line + b"\r\n" for line in body_lines)
