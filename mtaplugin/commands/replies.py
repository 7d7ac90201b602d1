"""Automatic replies: the per-sender daily cap, the "no more today" notice, and the
autoresponders (``autorespond_owner``, ``autorespond_postings``, ``autorespond_requests``).

Every automatic reply to one sender on one list counts against
``rules.email_command_replies_per_day``.  The reply past the cap is replaced by a single
``list:user:notice:no-more-today``; after it, nothing goes to that sender until the next
day, so two auto-responders cannot keep a loop going.  Mail that no person sent (RFC 3834,
see :func:`ignore_reason`) never gets a reply.

An autoresponder sends the list's ``autoresponse_*_text`` (Jinja2 or Mailman's
``$variables``) at most once per ``autoresponse_grace_period`` to a sender;
``respond_and_discard`` then drops the message, ``respond_and_continue`` lets it go on.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from mtaplugin import outbox
from mtaplugin.db import flushed_connection
from mtaplugin.enums import ResponseAction
from mtaplugin.i18n import _, using
from mtaplugin.model import AutoResponseRecord, MailingList
from mtaplugin.notices import build
from mtaplugin.notices.templates import list_variables, render_text, rendered
from mtaplugin.vocabulary import addresses
from mtaplugin.vocabulary.envelope import Envelope, Post

log = logging.getLogger(__name__)

_AUTOMATIC_LOCALS = ("mailer-daemon", "mailer_daemon")


def ignore_reason(post: Post, envelope: Envelope) -> str | None:
    """Why nobody should be answered (RFC 3834 §2), or None."""
    mail_from = addresses.strip_brackets(envelope.mail_from)
    if not mail_from:
        return "empty envelope sender"
    for address in (mail_from, post.from_address):
        local = addresses.split(address)[0].lower()
        if local in _AUTOMATIC_LOCALS or local.startswith("owner-"):
            return f"automatic sender {address}"
        if local.endswith(("-request", "-bounces")) or "-bounces+" in local:
            return f"list robot {address}"
    auto = post.get("Auto-Submitted").strip().lower()
    if auto and auto.split(";", 1)[0].strip() != "no":
        return f"Auto-Submitted: {auto}"
    precedence = post.get("Precedence").strip().lower()
    if precedence in ("bulk", "junk", "list") and post.get("X-Ack").strip().lower() != "yes":
        return f"Precedence: {precedence}"
    return None


REPLY = "command"
NO_MORE = "command-no-more-today"

#: autoresponder kind → (its setting, its text, the address it answers for)
KINDS = {
    "owner": ("autorespond_owner", "autoresponse_owner_text", "owner_address"),
    "postings": ("autorespond_postings", "autoresponse_postings_text", "posting_address"),
    "requests": ("autorespond_requests", "autoresponse_request_text", "request_address"),
}


#: Built once: every command to a list asks, inside the SMTP transaction.
_SENT_TODAY = (
    select(AutoResponseRecord.response_type, func.count(AutoResponseRecord.id))
    .where(
        AutoResponseRecord.email == bindparam("email"),
        AutoResponseRecord.mailing_list_id == bindparam("mailing_list_id"),
        AutoResponseRecord.response_type.in_([REPLY, NO_MORE]),
        AutoResponseRecord.sent_on >= bindparam("since"),
    )
    .group_by(AutoResponseRecord.response_type)
)


def may_reply(
    session: Session, mlist: MailingList, email: str, per_day: int, now: datetime
) -> str | None:
    """``REPLY`` if ``email`` may get another reply in the day before ``now`` (the
    engine's clock), ``NO_MORE`` for the one notice that says the cap is reached, None
    afterwards; records what it allows."""
    if per_day <= 0 or not email:
        return None
    params = {"email": email, "mailing_list_id": mlist.id, "since": now - timedelta(days=1)}
    counts = dict(flushed_connection(session).execute(_SENT_TODAY, params).tuples().all())
    if counts.get(REPLY, 0) < per_day:
        kind = REPLY
    elif not counts.get(NO_MORE):
        kind = NO_MORE
    else:
        return None
    session.add(
        AutoResponseRecord(email=email, mailing_list_id=mlist.id, response_type=kind, sent_on=now)
    )
    return kind


def send(
    session: Session,
    mlist: MailingList,
    sender: str,
    language: str,
    per_day: int,
    title: str,
    body: str,
    now: datetime,
    in_reply_to: str = "",
    from_address: str = "",
) -> bool:
    """Send one automatic reply within the cap (or the "no more today" notice instead)."""
    allowed = may_reply(session, mlist, sender, per_day, now)
    if allowed is None:
        log.info("no reply to %s on %s: daily cap reached", sender, mlist.list_id)
        return False
    if allowed == NO_MORE:
        body, title = rendered(
            "list:user:notice:no-more-today",
            language,
            lambda: _("Last automatic reply today from {list}").format(list=mlist.fqdn_listname),
            session=session,
            mlist=mlist,
            sender_email=sender,
            count=per_day,
        )
    extra = {"In-Reply-To": in_reply_to, "References": in_reply_to} if in_reply_to else {}
    raw = build(
        from_address or mlist.request_address,
        sender,
        title,
        body,
        auto="auto-replied",
        extra=extra,
    )
    outbox.list_notice(session, mlist, [sender], raw, now)
    return allowed == REPLY


def autorespond(
    session: Session,
    mlist: MailingList,
    kind: str,
    post: Post,
    envelope: Envelope,
    per_day: int,
    now: datetime,
    language: str | None = None,
) -> bool:
    """Run the ``kind`` autoresponder (``now``: the engine's clock); True when the message
    must be discarded."""
    setting, text_field, address_field = KINDS[kind]
    action: ResponseAction = getattr(mlist, setting)
    if action is ResponseAction.none:
        return False
    text: str = getattr(mlist, text_field)
    sender = post.from_address or addresses.strip_brackets(envelope.mail_from).lower()
    if text.strip() and sender and ignore_reason(post, envelope) is None:
        response_type = f"autorespond-{kind}"
        since = now - (mlist.autoresponse_grace_period or timedelta(0))
        recent = session.scalar(
            select(func.count(AutoResponseRecord.id)).where(
                AutoResponseRecord.email == sender,
                AutoResponseRecord.mailing_list_id == mlist.id,
                AutoResponseRecord.response_type == response_type,
                AutoResponseRecord.sent_on >= since,
            )
        )
        if not recent:
            lang = language or mlist.preferred_language
            with using(lang):
                try:
                    body = render_text(text, lang, list_variables(mlist))
                except Exception as exc:  # the owner's text: a sandbox refusal, a bad range
                    log.warning("autoresponse text of %s cannot render: %s", mlist, exc)
                    return action is ResponseAction.respond_and_discard
                title = _("Auto-response for your message to {address}").format(
                    address=getattr(mlist, address_field)
                )
            if send(session, mlist, sender, lang, per_day, title, body, now, post.message_id):
                session.add(
                    AutoResponseRecord(
                        email=sender,
                        mailing_list_id=mlist.id,
                        response_type=response_type,
                        sent_on=now,
                    )
                )
    return action is ResponseAction.respond_and_discard
