"""Notices mtaplugin sends: to moderators about held posts, to posters about their post.

Each builder returns the raw message; the caller puts it in the outbox in the same
transaction as the decision it reports.  Every notice carries ``Auto-Submitted`` (RFC 3834)
so that well-behaved auto-responders do not answer it, and nothing is ever sent to an
address whose ownership is not authenticated (that would be backscatter).

The bodies are Jinja2 templates with Mailman's names (:mod:`mtaplugin.notices.templates`),
rendered in the reader's language; subjects go through ``_()`` in the same language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import compat32
from email.utils import formatdate, make_msgid

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
    msg = EmailMessage()
    msg["From"] = header_value(mail_from)
    msg["To"] = header_value(to)
    msg["Subject"] = header_value(subject)
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = make_msgid(domain=mail_from.rpartition("@")[2] or None)
    msg["Auto-Submitted"] = auto
    msg["Precedence"] = "bulk"
    for name, value in (extra or {}).items():
        msg[header_value(name)] = header_value(value)
    msg.set_content(body)
    if attach is not None:
        _attach_message(msg, attach)
    return msg.as_bytes()


#: the longest line SMTP carries (RFC 5321 §4.5.3.1.6), without its CRLF
_MAX_LINE = 998


def transfer_encoding_of(raw: bytes) -> str | None:
    """How a message/rfc822 part holding ``raw`` is labelled: ``7bit`` or ``8bit``.

    RFC 2046 §5.2.1 allows no other encoding of a message/rfc822 body (no base64, no
    quoted-printable), so the post is attached as it came.  None when it is neither (a NUL
    or a line longer than SMTP allows): such a post cannot be a message/rfc822 part sent
    by mail at all."""
    if b"\0" in raw or any(len(line.rstrip(b"\r")) > _MAX_LINE for line in raw.split(b"\n")):
        return None
    return "7bit" if raw.isascii() else "8bit"


def _attach_message(msg: EmailMessage, raw: bytes) -> None:
    """The post attached unchanged, as Mailman attaches a held post (a message/rfc822
    part, the post's own bytes), but labelled honestly: ``8bit`` when it holds 8-bit text
    (Mailman leaves such a part unlabelled, which means 7bit), and the whole notice
    ``8bit`` too (RFC 2045 §6.4: a multipart is labelled with the widest encoding it
    holds).  The rare post that is not even 8bit (a NUL, a line over 998 octets) is
    attached as a file, ``post.eml`` in base64, which every reader can still open."""
    cte = transfer_encoding_of(raw)
    if cte is None:
        msg.add_attachment(raw, maintype="application", subtype="octet-stream", filename="post.eml")
        return
    msg.add_attachment(message_from_bytes(raw, policy=compat32), cte=cte)
    if cte == "8bit":
        msg["Content-Transfer-Encoding"] = "8bit"


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
