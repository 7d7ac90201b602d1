"""Building one digest: pure code, from the posts kept for it and the rendered texts.

Three kinds, as the members choose them (``delivery_mode``):

- **MIME** (``mime_digests``, as Mailman 3): a ``multipart/mixed`` whose parts are the
  masthead, the list's digest header (when it has one), the table of contents, one
  ``multipart/digest`` (RFC 2046 §5.1.5) holding every post as a ``message/rfc822`` part,
  byte for byte as the archive keeps it, and the footer.
- **plain** (``plaintext_digests``, RFC 1153): one ``text/plain``: the masthead, the table
  of contents, each post's kept header fields (Mailman's ``plain_digest_keep_headers``)
  and its text, separated by the lines RFC 1153 prescribes, then the footer and the
  ``End of ... Digest`` trailer.  A part that is not text (an attachment, an HTML-only
  post) is named in a line in its place: the MIME digest has it whole.
- **summary** (``summary_digests``): the masthead, the table of contents (subject, author,
  date and Message-ID of each post) and the footer.  Mailman 3 sends these members the
  MIME digest; mtaplugin sends what the name promises, the summary.

A post of any size is included whole (the MIME digest) or as its text (plain): a post
larger than ``digest_size_threshold`` only makes the digest go out at once.  A post whose
MIME structure is broken is still included: the MIME digest carries its bytes as they
are, and the plain digest shows what the parser could read of it, else its raw body.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from email import message_from_bytes
from email.charset import QP, Charset
from email.header import Header, decode_header, make_header
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import compat32
from email.utils import format_datetime, getaddresses, make_msgid

from mtaplugin.copies.transforms import headers as list_fields
from mtaplugin.enums import DeliveryMode
from mtaplugin.i18n import _, using
from mtaplugin.model import MailingList
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.regexes import usable
from mtaplugin.vocabulary.draft import Draft

CRLF = b"\r\n"
_EOL = re.compile(rb"\r?\n")
#: the header fields a plain digest keeps of each post (Mailman's plain_digest_keep_headers)
PLAIN_KEEP = ("Date", "From", "To", "Cc", "Subject", "Message-ID", "Keywords")
#: RFC 1153: 70 dashes after the table of contents, 30 between the posts
TOC_SEPARATOR = "-" * 70
POST_SEPARATOR = "-" * 30


@dataclass(frozen=True)
class Issue:
    volume: int
    number: int
    date: datetime


@dataclass(frozen=True)
class Texts:
    """The digest's texts in one language, rendered from the ``list:member:digest:*``
    templates ("" for none)."""

    language: str
    masthead: str
    header: str
    footer: str


@dataclass(frozen=True)
class DigestPost:
    """One post of a digest, as the digest store kept it (the archive copy)."""

    raw: bytes
    #: decoded header values for the table of contents
    subject: str
    author: str
    date: str
    message_id: str

    @classmethod
    def of(cls, raw: bytes, prefix: str = "") -> DigestPost:
        """The post's parts for the table of contents; the list's subject ``prefix`` is
        left out of it there (as Mailman does: every post has it)."""
        raw = crlf(raw)
        fields = BytesHeaderParser(policy=compat32).parsebytes(raw)
        return cls(
            raw=raw,
            subject=_without_prefix(_decoded(fields.get("Subject", "")), prefix)
            or _("(no subject)"),
            author=_author(fields.get("From", "")),
            date=_decoded(fields.get("Date", "")),
            message_id=_decoded(fields.get("Message-ID", "")),
        )


def crlf(raw: bytes) -> bytes:
    """``raw`` with CRLF line ends (the digest is one message: one kind of line end)."""
    return _EOL.sub(CRLF, raw)


def _decoded(value: object) -> str:
    text = str(value)
    with contextlib.suppress(ValueError, LookupError, UnicodeError):
        text = str(make_header(decode_header(text)))
    return " ".join(text.split())


def _without_prefix(subject: str, prefix: str) -> str:
    prefix = prefix.strip()
    if not prefix:
        return subject
    parts = [re.escape(p) for p in prefix.split("%d")]
    # linear time (mtaplugin.regexes): the prefix is the owner's, ``%d%d%d...`` included
    pattern = usable(r"^((re|aw|sv|vs)\s*:\s*)?" + r"\s*\d+\s*".join(parts) + r"\s*", "a prefix")
    match = pattern.match_at_start(subject) if pattern is not None else None
    if match is None:
        return subject
    return (subject[: match.start(0)] + (match.group(1) or "") + subject[match.end(0) :]).strip()


def _author(value: object) -> str:
    text = _decoded(value)
    pairs = getaddresses([text])
    if pairs and (pairs[0][0] or pairs[0][1]):
        name, address = pairs[0]
        return name or address
    return text


def subject(mlist: MailingList, issue: Issue) -> str:
    """Mailman's Subject: "<display name> Digest, Vol N, Issue M" (never translated, so
    that replies and Mailman's digest rule recognise it)."""
    name = mlist.display_name or mlist.list_name
    return f"{name} Digest, Vol {issue.volume}, Issue {issue.number}"


def table_of_contents(posts: Sequence[DigestPost], language: str) -> str:
    """Mailman's "Today's Topics": each post numbered, its subject and its author."""
    with using(language):
        lines = [_("Today's Topics:"), ""]
    for n, post in enumerate(posts, 1):
        entry = f"{n:4d}. {post.subject} ({post.author})"
        lines.extend(textwrap.wrap(entry, 72, subsequent_indent=" " * 6) or [entry])
    return "\n".join(lines) + "\n"


def build(
    mode: DeliveryMode,
    mlist: MailingList,
    issue: Issue,
    texts: Texts,
    posts: Sequence[DigestPost],
    listinfo_url: str = "",
) -> bytes:
    """The digest of ``mode`` for ``posts`` (in the order they came): its own content,
    under the header every kind shares (:func:`_header_block`)."""
    if mode is DeliveryMode.plaintext_digests:
        content, payload = _text_content(plain_body(mlist, issue, texts, posts))
    elif mode is DeliveryMode.summary_digests:
        content, payload = _text_content(summary_body(issue, texts, posts))
    else:
        content, payload = _mime_content(mlist, issue, texts, posts)
    return _header_block(mlist, issue, listinfo_url, content) + payload


#: a message's content header fields and its body
_Content = tuple[list[tuple[str, str]], bytes]


# --- the message around the digest -------------------------------------------------------
def _header_block(
    mlist: MailingList, issue: Issue, listinfo_url: str, content: list[tuple[str, str]]
) -> bytes:
    fields = [
        ("From", mlist.request_address),
        ("Subject", _encoded(subject(mlist, issue))),
        ("To", mlist.posting_address),
        ("Reply-To", mlist.posting_address),
        ("Date", format_datetime(issue.date)),
        ("Message-ID", make_msgid(f"digest.{issue.volume}.{issue.number}", mlist.mail_host)),
        ("MIME-Version", "1.0"),
        *content,
        ("Precedence", "list"),
    ]
    draft = Draft.from_bytes(b"".join(f"{k}: {v}".encode() + CRLF for k, v in fields) + CRLF)
    # List-Id and RFC 2369's fields, as on the list's posts (a member's own copy gets its
    # one-click link in place of the shared List-Unsubscribe as it leaves).
    list_fields.list_headers(TransformContext(mlist, listinfo_url=listinfo_url), draft)
    return draft.header_bytes()


def _encoded(text: str) -> str:
    if text.isascii():
        return text
    return Header(text, "utf-8").encode()


def _text_content(body: str) -> _Content:
    payload, cte = _text_payload(body)
    fields = [
        ("Content-Type", f"text/plain; charset={_charset(body)}"),
        ("Content-Transfer-Encoding", cte),
    ]
    return fields, payload


def _charset(text: str) -> str:
    return "us-ascii" if text.isascii() else "utf-8"


def _text_payload(text: str) -> tuple[bytes, str]:
    """The text's bytes with CRLF ends and its transfer encoding: 7bit when it is short
    ASCII lines, else quoted-printable UTF-8."""
    lines = text.split("\n")
    if text.isascii() and all(len(line) <= 998 for line in lines):
        return crlf(text.encode("ascii")), "7bit"
    cs = Charset("utf-8")
    cs.body_encoding = QP
    encoded = cs.body_encode(text) or ""
    return crlf(encoded.encode("ascii")), "quoted-printable"


def _text_part(text: str, description: str) -> bytes:
    payload, cte = _text_payload(text)
    head = (
        f"Content-Type: text/plain; charset={_charset(text)}\r\n"
        f"Content-Transfer-Encoding: {cte}\r\n"
        f"Content-Description: {_encoded(description)}\r\n\r\n"
    ).encode()
    return head + payload


# --- MIME --------------------------------------------------------------------------------
def _mime_content(
    mlist: MailingList, issue: Issue, texts: Texts, posts: Sequence[DigestPost]
) -> _Content:
    name = mlist.display_name or mlist.list_name
    with using(texts.language):
        parts: list[bytes] = [
            _text_part(texts.masthead or subject(mlist, issue), subject(mlist, issue))
        ]
        if texts.header.strip():
            parts.append(_text_part(texts.header, _("Digest Header")))
        topics = _("Today's Topics ({n} messages)").format(n=len(posts))
        parts.append(_text_part(table_of_contents(posts, texts.language), topics))
        inner = _boundary(posts)
        digest = [
            b"Content-Type: message/rfc822\r\n" + _cte_of(p.raw) + CRLF + p.raw for p in posts
        ]
        parts.append(
            f'Content-Type: multipart/digest; boundary="{inner}"\r\n'.encode()
            + f"Content-Description: {_encoded(_('{name} digest posts').format(name=name))}"
            "\r\n\r\n".encode()
            + _multipart_body(inner, digest)
        )
        if texts.footer.strip():
            parts.append(_text_part(texts.footer, _("Digest Footer")))
    outer = _boundary(posts, inner)
    fields = [("Content-Type", f'multipart/mixed; boundary="{outer}"')]
    return fields, _multipart_body(outer, parts)


def _cte_of(raw: bytes) -> bytes:
    """A message/rfc822 part may only be 7bit, 8bit or binary (RFC 2046 §5.2.1)."""
    if raw.isascii():
        return b""
    return b"Content-Transfer-Encoding: 8bit\r\n"


def _boundary(posts: Sequence[DigestPost], *taken: str) -> str:
    """A boundary found in no post (and unlike ``taken``)."""
    while True:
        candidate = f"===============digest-{secrets.token_hex(12)}=="
        token = candidate.encode()
        if candidate not in taken and not any(token in p.raw for p in posts):
            return candidate


def _multipart_body(boundary: str, parts: Sequence[bytes]) -> bytes:
    delimiter = b"--" + boundary.encode()
    out = [b""]
    for part in parts:
        out.append(delimiter + CRLF + part.rstrip(CRLF) + CRLF)
    out.append(delimiter + b"--" + CRLF)
    return CRLF.join(out)[len(CRLF) :]


# --- plain (RFC 1153) --------------------------------------------------------------------
def _text_front(texts: Texts, posts: Sequence[DigestPost]) -> list[str]:
    """The opening lines of a plain or summary digest: the masthead and the list's digest
    header (each when it has one), then the table of contents and its separator."""
    out: list[str] = []
    if texts.masthead.strip():
        out += [texts.masthead.rstrip("\n"), ""]
    if texts.header.strip():
        out += [texts.header.rstrip("\n"), ""]
    out += [table_of_contents(posts, texts.language), TOC_SEPARATOR, ""]
    return out


def plain_body(mlist: MailingList, issue: Issue, texts: Texts, posts: Sequence[DigestPost]) -> str:
    with using(texts.language):
        out = _text_front(texts, posts)
        for n, post in enumerate(posts, 1):
            out.append(_("Message: {n}").format(n=n))
            out += _plain_post(post)
            out += ["", POST_SEPARATOR, ""]
        if texts.footer.strip():
            out += [texts.footer.rstrip("\n"), "", POST_SEPARATOR, ""]
        end = _("End of {subject}").format(subject=subject(mlist, issue))
        out += [end, "*" * len(end), ""]
    return "\n".join(out)


def _plain_post(post: DigestPost) -> list[str]:
    """The post's kept header fields, a blank line, and its text."""
    try:
        msg = message_from_bytes(post.raw, policy=compat32)
        fields = [
            f"{name}: {_decoded(msg[name])}" for name in PLAIN_KEEP if msg.get(name) is not None
        ]
        body = _plain_text(msg)
    except Exception:
        fields = [f"Subject: {post.subject}", f"From: {post.author}"]
        body = post.raw.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")
    return [*fields, "", body.replace("\r\n", "\n").rstrip("\n")]


def _plain_text(msg: Message) -> str:
    """The post's text: its text/plain parts decoded; a line for every other part."""
    texts: list[str] = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        ctype = part.get_content_type()
        disposition = str(part.get("Content-Disposition", "")).split(";")[0].strip().lower()
        if ctype == "text/plain" and disposition != "attachment":
            texts.append(_decode_text(part))
            continue
        if ctype == "message/rfc822":
            continue
        name = part.get_filename() or ""
        raw = part.get_payload(decode=True)
        size = len(raw) if isinstance(raw, bytes) else 0
        texts.append(
            _("[a {type} part{name}, {size} bytes: in the MIME digest, not in this one]").format(
                type=ctype, name=f" ({name})" if name else "", size=size
            )
        )
    return "\n\n".join(t.rstrip("\n") for t in texts)


def _decode_text(part: Message) -> str:
    raw = part.get_payload(decode=True)
    if not isinstance(raw, bytes):
        return str(part.get_payload())
    charset = part.get_content_charset() or "us-ascii"
    try:
        return raw.decode(charset, "replace")
    except LookupError:  # an unknown charset
        return raw.decode("utf-8", "replace")


# --- summary -----------------------------------------------------------------------------
def summary_body(issue: Issue, texts: Texts, posts: Sequence[DigestPost]) -> str:
    with using(texts.language):
        out = _text_front(texts, posts)
        for n, post in enumerate(posts, 1):
            out.append(_("Message: {n}").format(n=n))
            out.append(f"Subject: {post.subject}")
            out.append(f"From: {post.author}")
            if post.date:
                out.append(f"Date: {post.date}")
            if post.message_id:
                out.append(f"Message-ID: {post.message_id}")
            out.append("")
        if texts.footer.strip():
            out += [POST_SEPARATOR, "", texts.footer.rstrip("\n"), ""]
    return "\n".join(out)
