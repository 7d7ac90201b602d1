"""Notices mtaplugin sends: to moderators about held posts, to posters about their post.

Each builder returns the raw message; the caller puts it in the outbox in the same
transaction as the decision it reports.  Every notice carries ``Auto-Submitted`` (RFC 3834)
so that well-behaved auto-responders do not answer it, and nothing is ever sent to an
address whose ownership is not authenticated (that would be backscatter).

The bodies are Jinja2 templates with Mailman's names (:mod:`mtaplugin.notices.templates`),
rendered in the reader's language; subjects go through ``_()`` in the same language.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.header import Header
from email.message import EmailMessage
from email.utils import formataddr, formatdate, getaddresses, make_msgid

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.i18n import N_, _, using
from mtaplugin.model import AutoResponseRecord, Domain, MailingList
from mtaplugin.notices.templates import render
from mtaplugin.posting.verdict import Reason

#: control characters (CR, LF, NUL...) and the Unicode line and paragraph separators
_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def header_value(text: str) -> str:
    """``text`` fit for one header: a sender's address or display name, a post's subject
    (an encoded word may hide a line break) or a list owner's text cannot end the header
    and start another one (``Bcc:``...): line breaks and other control characters become
    spaces (the email package would refuse them, and the notice would be lost)."""
    return " ".join(_BREAKS.sub(" ", text).split())


def build(
    mail_from: str,
    to: str,
    subject: str,
    body: str,
    *,
    attach: bytes | None = None,
    auto: str = "auto-generated",
    extra: dict[str, str] | None = None,
) -> bytes:
    """A notice's bytes: its headers, the text ``body``, and ``attach`` (a post, or a
    bounce) attached as it came.

    Written out directly, not through ``EmailMessage``: a notice is made inside the SMTP
    transaction (a held post's, a command's reply, a forwarded bounce), where the email
    package's parsing and folding of every header and its parsing of the attached post
    cost about 2 ms of the answer's time.  The library still encodes what needs it
    (:func:`_header`: RFC 2047 words; a body with lines too long for 7bit or 8bit, which
    ``set_content`` encodes quoted-printable or base64 as before); the rare post that is
    not even 8bit is attached by ``EmailMessage`` as before (:func:`_attach_file`)."""
    lines = [
        _header("From", mail_from),
        _header("To", to),
        _header("Subject", subject),
        f"Date: {formatdate(localtime=False)}\n",
        f"Message-ID: {make_msgid(domain=mail_from.rpartition('@')[2] or None)}\n",
        f"Auto-Submitted: {auto}\n",
        "Precedence: bulk\n",
    ]
    for name, value in (extra or {}).items():
        lines.append(_header(header_value(name), value))
    head = "".join(lines).encode("ascii")
    text_cte, text = _text(body)
    if attach is None:
        return (
            head
            + b'MIME-Version: 1.0\nContent-Type: text/plain; charset="utf-8"\n'
            + b"Content-Transfer-Encoding: " + text_cte + b"\n\n" + text
        )  # fmt: skip
    cte = transfer_encoding_of(attach)
    if cte is None:
        return _attach_file(head, body, attach)
    post = attach.replace(b"\r\n", b"\n")
    if not post.endswith(b"\n"):
        post += b"\n"
    boundary = _boundary(text, post)
    widest = b"8bit" if b"8bit" in (text_cte, cte.encode()) else b"7bit"
    return (
        head
        + b'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="' + boundary + b'"\n'
        + (b"Content-Transfer-Encoding: 8bit\n" if widest == b"8bit" else b"")
        + b"\n--" + boundary
        + b'\nContent-Type: text/plain; charset="utf-8"\nContent-Transfer-Encoding: '
        + text_cte + b"\n\n" + text
        + b"\n--" + boundary
        + b"\nContent-Type: message/rfc822\nContent-Transfer-Encoding: " + cte.encode()
        + b"\nContent-Disposition: attachment\n\n" + post
        + b"\n--" + boundary + b"--\n"
    )  # fmt: skip


#: the headers that hold addresses (a display name is encoded apart from its address)
_ADDRESS_HEADERS = frozenset({"from", "to", "cc", "reply-to", "sender"})
#: the longest header line written unfolded (RFC 5322 §2.1.1's 78)
_FOLD_AT = 78


def _header(name: str, value: str) -> str:
    """``name: value`` on one line, or folded, with non-ASCII text as RFC 2047 encoded
    words (a display name encoded apart from its address)."""
    value = header_value(value)
    if value.isascii() and len(name) + 2 + len(value) <= _FOLD_AT:
        return f"{name}: {value}\n"
    if name.lower() in _ADDRESS_HEADERS and not value.isascii():
        with contextlib.suppress(UnicodeError):  # an address itself not ASCII: below
            pairs = getaddresses([value])
            if pairs and all(addr for _name, addr in pairs):
                value = ", ".join(formataddr(pair, charset="utf-8") for pair in pairs)
        if value.isascii() and len(name) + 2 + len(value) <= _FOLD_AT:
            return f"{name}: {value}\n"
    charset = "us-ascii" if value.isascii() else "utf-8"
    folded = Header(value, charset, maxlinelen=_FOLD_AT, header_name=name).encode(linesep="\n")
    return f"{name}: {folded}\n"


def _text(body: str) -> tuple[bytes, bytes]:
    """The text part's transfer encoding and payload, chosen as ``set_content`` chooses:
    7bit or 8bit when every line fits, else what the library picks (quoted-printable or
    base64)."""
    lines = body.encode("utf-8").splitlines()
    if max((len(line) for line in lines), default=0) <= _FOLD_AT:
        payload = b"\n".join(lines) + b"\n"
        return (b"7bit" if payload.isascii() else b"8bit"), payload
    part = EmailMessage()
    part.set_content(body)
    cte = str(part["Content-Transfer-Encoding"])
    return cte.encode("ascii"), str(part.get_payload(decode=False)).encode("ascii")


def _boundary(*parts: bytes) -> bytes:
    """A multipart boundary found in none of ``parts``."""
    while True:
        boundary = f"===============mtaplugin{secrets.token_hex(10)}==".encode("ascii")
        if not any(boundary in part for part in parts):
            return boundary


def _attach_file(head: bytes, body: str, raw: bytes) -> bytes:
    """The notice with ``raw`` attached as a file, ``post.eml`` in base64 (a post that
    cannot be a message/rfc822 part: a NUL, a line over 998 octets)."""
    msg = EmailMessage()
    msg.set_content(body)
    msg.add_attachment(raw, maintype="application", subtype="octet-stream", filename="post.eml")
    return head + msg.as_bytes()


#: the longest line SMTP carries (RFC 5321 §4.5.3.1.6), without its CRLF
_MAX_LINE = 998


def transfer_encoding_of(raw: bytes) -> str | None:
    """How a message/rfc822 part holding ``raw`` is labelled: ``7bit`` or ``8bit``.

    RFC 2046 §5.2.1 allows no other encoding of a message/rfc822 body (no base64, no
    quoted-printable), so the post is attached as it came: the post's own bytes, as
    Mailman attaches a held post, but labelled honestly: ``8bit`` when it holds 8-bit
    text (Mailman leaves such a part unlabelled, which means 7bit), and the whole notice
    ``8bit`` too (RFC 2045 §6.4: a multipart is labelled with the widest encoding it
    holds).  None when it is neither (a NUL or a line longer than SMTP allows): such a
    post cannot be a message/rfc822 part sent by mail at all, and is attached as a file."""
    if b"\0" in raw or any(len(line.rstrip(b"\r")) > _MAX_LINE for line in raw.split(b"\n")):
        return None
    return "7bit" if raw.isascii() else "8bit"


def _reason_lines(reasons: tuple[Reason, ...]) -> str:
    return "\n".join(f"  - {r.text} ({r.rule})" for r in reasons)


def confirm_address(mlist: MailingList, token: str) -> str:
    """``list-confirm+TOKEN@host``: where a reply to a confirmation or moderation notice goes."""
    return f"{mlist.list_name}-confirm+{token}@{mlist.mail_host}"


def _queue_links(session: Session | None, mlist: MailingList, held_id: int) -> dict[str, str]:
    """The held post's page and the moderation queue in the web UI, at the list domain's
    ``base_url`` (as the digests link to the list's page); none when it has no web UI."""
    if session is None:
        return {}
    base_url = session.scalar(select(Domain.base_url).where(Domain.mail_host == mlist.mail_host))
    if not base_url:
        return {}
    queue = f"{base_url.rstrip('/')}/lists/{mlist.list_id}/held"
    return {"held_url": f"{queue}/{held_id}", "queue_url": queue}


def moderator_hold_notice(
    mlist: MailingList,
    held_id: int,
    sender: str,
    subject: str,
    reasons: tuple[Reason, ...],
    raw: bytes,
    token: str | None = None,
    session: Session | None = None,
    message_id: str = "",
) -> bytes:
    """``list:admin:action:post``: the held post attached; with ``token``, a Reply-To of
    ``list-confirm+TOKEN@`` so that a moderator can answer approve/reject/discard.  The
    post is named by its request id (never reused) and its Message-ID."""
    with using(mlist.preferred_language):
        body = render(
            "list:admin:action:post",
            mlist.preferred_language,
            session=session,
            mlist=mlist,
            sender_email=sender or _("(no From: address)"),
            subject=subject or _("(no subject)"),
            reasons=_reason_lines(reasons),
            request_id=held_id,
            message_id=message_id or _("(no Message-ID)"),
            token=token or "",
            **_queue_links(session, mlist, held_id),
        )
        title = _("{list} post from {sender} requires approval").format(
            list=mlist.fqdn_listname, sender=sender or _("(no From: address)")
        )
    extra = {"Reply-To": confirm_address(mlist, token)} if token else None
    return build(mlist.owner_address, mlist.owner_address, title, body, attach=raw, extra=extra)


#: the notices to a poster: their template and their title (``{list}`` filled in)
_HOLD = ("list:user:notice:hold", N_("Your post to {list} awaits moderator approval"))
_POST = ("list:user:notice:post", N_("{list} post acknowledgement"))
_REJECTED = ("list:user:notice:rejected", N_("Your post to {list} was not distributed"))


@dataclass(frozen=True)
class Poster:
    """Whom a notice to a poster goes to, about which post: the list, the poster's
    address, the post's subject, the poster's language (``None``: the list's) and the
    session its template is read in (``None``: the built-in templates only)."""

    mlist: MailingList
    sender: str
    subject: str
    language: str | None = None
    session: Session | None = None


def _to_poster(
    poster: Poster, notice: tuple[str, str], attach: bytes | None = None, **values: str
) -> bytes:
    """The ``notice`` (its template's name, its title marked with ``N_()``) to the
    ``poster``, in their language or the list's, from -bounces."""
    name, title = notice
    mlist = poster.mlist
    with using(poster.language or mlist.preferred_language) as lang:
        body = render(
            name,
            lang,
            session=poster.session,
            mlist=mlist,
            subject=poster.subject or _("(no subject)"),
            **values,
        )
        heading = _(title).format(list=mlist.fqdn_listname)
    return build(
        mlist.bounces_address, poster.sender, heading, body, attach=attach, auto="auto-replied"
    )


def poster_hold_notice(poster: Poster, reasons: tuple[Reason, ...]) -> bytes:
    """``list:user:notice:hold``."""
    return _to_poster(poster, _HOLD, reasons=_reason_lines(reasons))


def post_acknowledgement(poster: Poster) -> bytes:
    """``list:user:notice:post``: the member's post went to the members."""
    return _to_poster(poster, _POST)


def poster_rejected_notice(poster: Poster, reason: str, raw: bytes) -> bytes:
    """``list:user:notice:rejected``, the post attached."""
    return _to_poster(poster, _REJECTED, attach=raw, reason=reason)


def filtered_post_notice(
    mlist: MailingList, sender: str, subject: str, reason: str, raw: bytes
) -> bytes:
    """To the owners: a post content filtering kept from the members (filter_action
    ``forward``), attached."""
    body = _(
        "A post to {list} from {sender} with the subject\n\n    {subject}\n\n"
        "matched the list's content filtering rules and was not distributed:\n\n"
        "    {reason}\n\nThe post is attached.\n"
    ).format(
        list=mlist.fqdn_listname,
        sender=sender or _("(no From: address)"),
        subject=subject or _("(no subject)"),
        reason=reason,
    )
    return build(
        mlist.bounces_address,
        mlist.owner_address,
        _("Content filtered post to {list}").format(list=mlist.fqdn_listname),
        body,
        attach=raw,
    )


def may_respond(
    session: Session, mlist_id: int, email: str, kind: str, per_day: int, now: datetime
) -> bool:
    """Whether ``email`` may get another ``kind`` notice in the day before ``now`` (the
    engine's clock); records it if so."""
    if per_day <= 0:
        return False
    since = now - timedelta(days=1)
    sent = session.scalar(
        select(func.count(AutoResponseRecord.id)).where(
            AutoResponseRecord.email == email,
            AutoResponseRecord.mailing_list_id == mlist_id,
            AutoResponseRecord.response_type == kind,
            AutoResponseRecord.sent_on >= since,
        )
    )
    if (sent or 0) >= per_day:
        return False
    session.add(
        AutoResponseRecord(email=email, mailing_list_id=mlist_id, response_type=kind, sent_on=now)
    )
    return True
