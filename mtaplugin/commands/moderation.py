"""Moderation by reply.

The moderators' notice of a held post (``list:admin:action:post``) or of a (un)subscription
request waiting for approval carries ``Reply-To: list-confirm+TOKEN@``.  A reply there acts
when its first typed line (quoted lines and the attribution line skipped; else the Subject
after ``Re:``) starts with ``approve`` (or ``accept``), ``reject [reason]``, ``discard`` or
``defer``, and only when

* the From: address is an owner or moderator of that list **and** the MTA authenticated it
  (aligned DKIM/SPF/DMARC pass from a trusted verifier, or SMTP AUTH), or
* for compatibility, the list has a ``moderator_password`` and the reply carries it in its
  first ``Approved:``/``Approve:`` header, or else as a first body line ``Approved:
  PASSWORD`` (one value, checked at most once per message:
  :mod:`mtaplugin.posting.moderator_password`).

A reply without a command changes nothing (Mailman discards the post), unless it carries
the list's password (Mailman 2.1's ``Approved:`` alone approves); a reply that cannot be
authenticated changes nothing.  ``confirm TOKEN`` sent to ``list-request@`` (Mailman 2.1's
way of answering) works the same as a reply to ``list-confirm+TOKEN@``.  Either gets an
answer that says so.  Every action is in the audit log with the moderator's address and
what authenticated it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select

from mtaplugin.enums import MemberRole, RequestType
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import N_, _
from mtaplugin.manage import held as held_ops
from mtaplugin.manage import subscriptions
from mtaplugin.model import Address, Member, PendingRequest
from mtaplugin.posting import moderator_password as password
from mtaplugin.posting.rules.approved import HEADERS

if TYPE_CHECKING:
    from mtaplugin.commands.mail import CommandMail
    from mtaplugin.commands.parse import CommandLines

WORDS = {
    "approve": "approve",
    "accept": "approve",
    "reject": "reject",
    "discard": "discard",
    "defer": "defer",
}

#: the answer to a moderator's decision on a held post
HELD_DONE = {
    "approve": N_("The held post {id} was approved and goes to the members."),
    "reject": N_("The held post {id} was rejected."),
    "discard": N_("The held post {id} was discarded."),
    "defer": N_("The held post {id} stays held."),
}
#: the answer to a moderator's decision on a (un)subscription request
REQUEST_DONE = {
    "approve": N_("The request of {email} was approved."),
    "reject": N_("The request of {email} was rejected."),
    "discard": N_("The request of {email} was discarded."),
    "defer": N_("The request of {email} stays waiting."),
}


def command_of(lines: CommandLines) -> tuple[str, str] | None:
    """(action, reason) from the first typed line (a ``confirm TOKEN`` line skipped), else
    from the subject."""
    typed = [w for w in lines.body if w and w[0].lower() != "confirm"][:1]
    for words in (*typed, lines.subject):
        word = words[0].lower().rstrip(":.!,") if words else ""
        if word in WORDS:
            return WORDS[word], " ".join(words[1:])
    return None


def _password_ok(mail: CommandMail, lines: CommandLines) -> bool:
    """The reply carries the list's password: in its first non-empty approval header, else
    on its first body line.  One value only, checked at most once per message (the
    answer is remembered: this is asked twice for a reply without a command)."""
    hashed = mail.mlist.moderator_password
    if not hashed:
        return False
    value = password.first_value(mail.post.headers.raw_items(), HEADERS)
    for words in lines.body[:1] if not value else ():
        if len(words) >= 2 and words[0].lower().rstrip(":") in ("approved", "approve"):
            value = " ".join(words[1:])
    return password.matches(mail.post.raw, value, hashed, mail.mlist.fqdn_listname)


def _is_staff(mail: CommandMail) -> bool:
    return (
        mail.session.scalar(
            select(Member.id)
            .join(Address, Address.id == Member.address_id)
            .where(
                Member.mailing_list_id == mail.mlist.id,
                Member.role.in_([MemberRole.owner, MemberRole.moderator]),
                Address.email == mail.identity.address,
            )
        )
        is not None
    )


def authenticate(mail: CommandMail, lines: CommandLines) -> str | None:
    """The actor recorded in the audit log, or None when the reply may not moderate."""
    if mail.identity.authenticated and _is_staff(mail):
        return f"{mail.identity.address} ({', '.join(mail.identity.signals)})"
    if _password_ok(mail, lines):
        return f"{mail.sender or 'unknown'} (moderator password)"
    return None


def by_reply(mail: CommandMail, pending: PendingRequest, lines: CommandLines) -> None:
    """A reply to a moderators' notice (see the module doc)."""
    command = command_of(lines)
    if command is None and _password_ok(mail, lines):
        # Mailman 2.1's way: the Approved: password alone approves.
        command = ("approve", "")
    if command is None:
        mail.say(
            _(
                "No decision was found in your reply, so nothing was changed.  Reply with "
                "approve, reject [reason] or discard at the top of your message."
            )
        )
        return
    action, reason = command
    actor = authenticate(mail, lines)
    if actor is None:
        mail.say(
            _(
                "Your reply could not be authenticated as coming from a moderator of {list} "
                "(the From: address must be an owner or moderator, and your mail server must "
                "authenticate it with DKIM, SPF or SMTP AUTH), so nothing was changed."
            ).format(list=mail.mlist.fqdn_listname)
        )
        return
    try:
        if pending.request_type is RequestType.held_message:
            if pending.held_message_id is None:
                raise InvalidInput("token", _("this token names no held post"))
            held_id = pending.held_message_id
            if action != "defer":
                mail.session.delete(pending)
                mail.session.flush()
            by = held_ops.Moderator.of(mail.session, mail.mlist, actor, mail.policy.workflow)
            held_ops.act(by, held_id, action, reason)
            done = _(HELD_DONE[action]).format(id=held_id)
        else:
            email = pending.email
            subscriptions.moderate(
                mail.session,
                mail.mlist,
                pending.token,
                "accept" if action == "approve" else action,
                actor=actor,
                reason=reason,
                settings=mail.policy.workflow,
            )
            done = _(REQUEST_DONE[action]).format(email=email)
    except InvalidInput as exc:
        mail.say(exc.problem)
        return
    mail.say(done)
