"""Mail to a list's command addresses, from the engine to the commands and back.

:func:`handle` is the one entry point (the engine calls it for ``-request``, ``-join``,
``-leave``, ``-subscribe``, ``-unsubscribe`` and ``-confirm[+TOKEN]``):

1. Mail that no person sent is ignored, nothing is answered (RFC 3834 §2): an empty
   envelope sender (a bounce), ``MAILER-DAEMON``/``owner-*``/``*-request``/``*-bounces``
   senders, ``Auto-Submitted`` other than ``no``, ``Precedence: bulk|junk|list`` (unless
   ``X-Ack: yes``).
2. ``-request`` runs ``autorespond_requests`` (respond_and_discard stops here), then every
   command line; one reply to the sender sums up every result.
3. ``-join``/``-leave`` imply ``join``/``leave``, ``-confirm+TOKEN`` implies ``confirm
   TOKEN`` (or moderates, for a moderator's token); they answer only when something needs
   saying (an error, a request waiting for a moderator).  The confirmation and welcome
   messages are the answer otherwise.

Replies go to the From: address (else the envelope sender) and are capped per sender, list
and day (``rules.email_command_replies_per_day``): the reply past the cap is a single
``list:user:notice:no-more-today``, then nothing until the next day.  The SMTP answer is 250
whatever the commands did.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin import addresses, outbound
from mtaplugin.commands import builtin, moderation, parse
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _, using
from mtaplugin.identity import SenderIdentity
from mtaplugin.manage import subscriptions
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.message import Envelope, Post
from mtaplugin.model import AutoResponseRecord, MailingList, PendingRequest
from mtaplugin.model.base import utcnow
from mtaplugin.model.enums import RequestType, ResponseAction, TokenOwner
from mtaplugin.notices import build
from mtaplugin.notices.templates import list_variables, render, render_text

log = logging.getLogger(__name__)

REPLY = "command"
NO_MORE = "command-no-more-today"
AUTORESPONSE = "autorespond-requests"


@dataclass(frozen=True)
class CommandPolicy:
    workflow: WorkflowSettings = field(default_factory=WorkflowSettings)
    #: body lines read for commands (Mailman's email_commands_max_lines)
    max_lines: int = 10
    #: replies to one sender per list per day
    replies_per_day: int = 10


@dataclass
class CommandMail:
    """One message to a command address, with what the commands collect."""

    session: Session
    mlist: MailingList
    subaddress: str
    extension: str
    post: Post
    envelope: Envelope
    identity: SenderIdentity
    policy: CommandPolicy
    #: where replies go: the From: address, else the envelope sender
    sender: str = ""
    language: str = "en"
    results: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    #: a reply is sent only when something needs saying
    must_reply: bool = False
    #: commands already run in this message (one join per message, as in Mailman)
    done: set[str] = field(default_factory=set)

    @property
    def authenticated_sender(self) -> bool:
        """The reply address is the From: address and the MTA authenticated it."""
        return self.identity.authenticated and self.identity.address == self.sender

    def say(self, text: str) -> None:
        self.results.append(text)
        self.must_reply = True


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


def may_reply(session: Session, mlist: MailingList, email: str, per_day: int) -> str | None:
    """``"reply"`` if ``email`` may get another reply today, ``"no-more"`` for the one
    notice that says the cap is reached, None afterwards; records what it allows."""
    if per_day <= 0 or not email:
        return None
    since = utcnow() - timedelta(days=1)
    counts = dict(
        session.execute(
            select(AutoResponseRecord.response_type, func.count(AutoResponseRecord.id))
            .where(
                AutoResponseRecord.email == email,
                AutoResponseRecord.mailing_list_id == mlist.id,
                AutoResponseRecord.response_type.in_([REPLY, NO_MORE]),
                AutoResponseRecord.sent_on >= since,
            )
            .group_by(AutoResponseRecord.response_type)
        ).all()
    )
    if counts.get(REPLY, 0) < per_day:
        kind = REPLY
    elif not counts.get(NO_MORE):
        kind = NO_MORE
    else:
        return None
    session.add(AutoResponseRecord(email=email, mailing_list_id=mlist.id, response_type=kind))
    return kind


def _send_reply(mail: CommandMail) -> None:
    """The one reply of this message, within the sender's daily cap."""
    mlist = mail.mlist
    allowed = may_reply(mail.session, mlist, mail.sender, mail.policy.replies_per_day)
    if allowed is None:
        log.info("no reply to %s on %s: daily cap reached", mail.sender, mlist.list_id)
        return
    with using(mail.language) as lang:
        if allowed == NO_MORE:
            body = render(
                "list:user:notice:no-more-today",
                lang,
                session=mail.session,
                mlist=mlist,
                sender_email=mail.sender,
                count=mail.policy.replies_per_day,
            )
            title = _("Last automatic reply today from {list}").format(list=mlist.fqdn_listname)
        else:
            body = render(
                "list:user:notice:results",
                lang,
                session=mail.session,
                mlist=mlist,
                results="\n\n".join(mail.results),
                ignored="\n".join(f"    {line}" for line in mail.ignored),
            )
            title = _("The results of your email commands")
    extra = {}
    if mail.post.message_id:
        extra = {"In-Reply-To": mail.post.message_id, "References": mail.post.message_id}
    raw = build(mlist.request_address, mail.sender, title, body, auto="auto-replied", extra=extra)
    outbound.enqueue(
        mail.session,
        mlist.bounces_address,
        [mail.sender],
        raw,
        kind="notice",
        mailing_list_id=mlist.id,
    )


def _autorespond(mail: CommandMail) -> bool:
    """``autorespond_requests``: True when the message must not be processed further."""
    mlist = mail.mlist
    action = mlist.autorespond_requests
    if action is ResponseAction.none or not mlist.autoresponse_request_text.strip():
        return False
    since = utcnow() - (mlist.autoresponse_grace_period or timedelta(0))
    recent = mail.session.scalar(
        select(func.count(AutoResponseRecord.id)).where(
            AutoResponseRecord.email == mail.sender,
            AutoResponseRecord.mailing_list_id == mlist.id,
            AutoResponseRecord.response_type == AUTORESPONSE,
            AutoResponseRecord.sent_on >= since,
        )
    )
    if not recent and may_reply(mail.session, mlist, mail.sender, mail.policy.replies_per_day):
        record = AutoResponseRecord(
            email=mail.sender, mailing_list_id=mlist.id, response_type=AUTORESPONSE
        )
        mail.session.add(record)

        with using(mail.language):
            text = render_text(
                mlist.autoresponse_request_text, mail.language, list_variables(mlist)
            )
            title = _("Auto-response for your message to {address}").format(
                address=mlist.request_address
            )
        outbound.enqueue(
            mail.session,
            mlist.bounces_address,
            [mail.sender],
            build(mlist.request_address, mail.sender, title, text, auto="auto-replied"),
            kind="notice",
            mailing_list_id=mlist.id,
        )
    return action is ResponseAction.respond_and_discard


def _confirm_address(mail: CommandMail, lines: parse.CommandLines) -> None:
    token = mail.extension
    if not token:
        # -confirm@ without a token: "confirm TOKEN" in the subject or body (Mailman).
        for words in (lines.subject, *lines.body):
            if len(words) >= 2 and words[0].lower() == "confirm":
                token = words[1]
                break
    if not token:
        mail.say(_("No confirmation token was found in your message."))
        return
    try:
        pending = subscriptions.get_pending(mail.session, token, mail.mlist)
    except InvalidInput as exc:
        mail.say(exc.problem)
        return
    if pending.request_type is RequestType.held_message or (
        pending.token_owner is TokenOwner.moderator
    ):
        moderation.by_reply(mail, pending, lines)
        return
    builtin.confirm_token(mail, pending.token)


def handle(
    session: Session,
    mlist_pk: int,
    subaddress: str,
    extension: str,
    post: Post,
    envelope: Envelope,
    identity: SenderIdentity,
    policy: CommandPolicy,
) -> None:
    """Process one message to a command address of list ``mlist_pk`` (see the module doc)."""
    reason = ignore_reason(post, envelope)
    if reason is not None:
        log.info("mail to %s-%s ignored: %s", mlist_pk, subaddress, reason)
        return
    mlist = session.get(MailingList, mlist_pk)
    if mlist is None:
        return
    sender = post.from_address or addresses.strip_brackets(envelope.mail_from).lower()
    mail = CommandMail(
        session, mlist, subaddress, extension, post, envelope, identity, policy, sender=sender
    )
    mail.language = subscriptions.language_of(session, mlist, sender)
    with using(mail.language):
        lines = parse.read(post, policy.max_lines)
        if subaddress == "confirm":
            _confirm_address(mail, lines)
        elif subaddress in ("join", "subscribe"):
            builtin.join(mail, [])
            # -join answers only when something needs saying
        elif subaddress in ("leave", "unsubscribe"):
            builtin.leave(mail, [])
        else:
            if _autorespond(mail):
                return
            builtin.run_lines(mail, lines)
            mail.must_reply = True
        if mail.must_reply:
            _send_reply(mail)


__all__ = ["CommandMail", "CommandPolicy", "PendingRequest", "handle", "ignore_reason"]
