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
and day (:mod:`~mtaplugin.commands.replies`).  The SMTP answer is 250
whatever the commands did.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.commands import builtin, moderation, parse, replies
from mtaplugin.commands.mail import CommandMail, CommandPolicy
from mtaplugin.enums import RequestType, TokenOwner
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _, available_languages, match_language, using
from mtaplugin.lists import roster
from mtaplugin.lists.language import language_of
from mtaplugin.mailauth.identity import SenderIdentity
from mtaplugin.manage import subscriptions
from mtaplugin.model import MailingList, PendingRequest
from mtaplugin.notices.templates import render
from mtaplugin.posting.verdict import Reply, permanent
from mtaplugin.vocabulary import addresses
from mtaplugin.vocabulary.addresses import Subaddress
from mtaplugin.vocabulary.envelope import Envelope, Post

log = logging.getLogger(__name__)


def recipient_needs_check(hit: roster.FoundList) -> bool:
    """Whether :func:`check_recipient` has anything to read for ``hit`` (a
    ``list-confirm+TOKEN@`` address); for any other it answers ``None``."""
    return hit.address.subaddress is Subaddress.confirm and bool(hit.address.extension)


def check_recipient(
    db: roster.DB, hit: roster.FoundList, recipient: str, now: datetime
) -> Reply | None:
    """At RCPT: ``list-confirm+TOKEN@`` whose token is unknown or expired (at ``now``, the
    engine's clock) is refused (``550 5.1.1``), so that the sender's own MTA tells them,
    and nothing is mailed back."""
    if not recipient_needs_check(hit):
        return None
    token = hit.address.extension
    table = PendingRequest.__table__
    live = (
        roster._conn(db)
        .execute(
            select(table.c.id).where(
                table.c.token == token,
                table.c.mailing_list_id == hit.pk,
                table.c.expires_at > now,
            )
        )
        .first()
    )
    if live is not None:
        return None
    return permanent(
        "5.1.1",
        _("<{address}>: no pending request has this token (or it has expired)").format(
            address=addresses.strip_brackets(recipient)
        ),
    )


def header_language(post: Post) -> str | None:
    """The first shipped language named by ``Accept-Language`` or ``Content-Language``."""
    shipped = available_languages()
    for name in ("Accept-Language", "Content-Language"):
        for tag in post.get(name).replace(";", ",").split(","):
            code = match_language(tag.strip(), shipped)
            if code:
                return code
    return None


def _send_reply(mail: CommandMail) -> None:
    """The one reply of this message, within the sender's daily cap."""
    with using(mail.language) as lang:
        body = render(
            "list:user:notice:results",
            lang,
            session=mail.session,
            mlist=mail.mlist,
            results="\n\n".join(mail.results),
            ignored="\n".join(f"    {line}" for line in mail.ignored),
        )
        title = _("The results of your email commands")
    replies.send(
        mail.session,
        mail.mlist,
        mail.sender,
        mail.language,
        mail.policy.replies_per_day,
        title,
        body,
        mail.now,
        mail.post.message_id,
    )


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
        pending = subscriptions.get_pending(mail.session, token, mail.mlist, mail.policy.workflow)
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
    now: datetime,
) -> None:
    """Process one message to a command address of list ``mlist_pk`` (see the module doc);
    ``now``: the engine's clock."""
    reason = replies.ignore_reason(post, envelope)
    if reason is not None:
        log.info("mail to %s-%s ignored: %s", mlist_pk, subaddress, reason)
        return
    mlist = session.get(MailingList, mlist_pk)
    if mlist is None:
        return
    sender = post.from_address or addresses.strip_brackets(envelope.mail_from).lower()
    mail = CommandMail(
        session, mlist, subaddress, extension, post, envelope, identity, policy, now, sender=sender
    )
    mail.asked_language = header_language(post)
    mail.language = language_of(session, mlist, sender, mail.asked_language)
    with using(mail.language):
        lines = mail.lines = parse.read(post, policy.max_lines)
        if subaddress == "confirm":
            _confirm_address(mail, lines)
        elif subaddress in ("join", "subscribe"):
            builtin.join(mail, [])
            # -join answers only when something needs saying
        elif subaddress in ("leave", "unsubscribe"):
            builtin.leave(mail, [])
        else:
            if replies.autorespond(
                session,
                mlist,
                "requests",
                post,
                envelope,
                policy.replies_per_day,
                now,
                mail.language,
            ):
                return
            # One reply sums up the results; a join or leave of one's own address that
            # only started a confirmation says nothing more than the confirmation does.
            builtin.run_lines(mail, lines)
        if mail.must_reply:
            _send_reply(mail)


__all__ = ["handle"]
