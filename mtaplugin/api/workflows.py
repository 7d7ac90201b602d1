"""Mailman's REST view of the subscription workflows, on :mod:`mtaplugin.manage.subscriptions`
(the one implementation the email commands, the CLI and the web pages use too).

REST speaks of 201 with the member, or 202 with ``{token, token_owner}``; a moderator's
``accept`` on a request moves it on by one step, whoever holds the token (Mailman's
``POST /lists/{list}/requests/{token}``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from mtaplugin.errors import AlreadyExists, InvalidInput
from mtaplugin.i18n import _
from mtaplugin.manage import members, subscriptions
from mtaplugin.manage.subscriptions import Status, WorkflowSettings
from mtaplugin.model import MailingList, Member, PendingRequest
from mtaplugin.model.enums import DeliveryMode, DeliveryStatus, MemberRole, TokenOwner
from mtaplugin.posting.addresses import normalize_email

#: which token a pending status waits on
_OWNERS = {
    Status.pending_confirmation: TokenOwner.subscriber,
    Status.pending_approval: TokenOwner.moderator,
}


@dataclass(frozen=True)
class Outcome:
    """Either the member (done: 201) or the token someone must act on (202)."""

    member: Member | None = None
    token: str | None = None
    token_owner: TokenOwner | None = None


def _outcome(
    session: Session, mlist: MailingList, email: str, status: Status, token: str | None
) -> Outcome:
    if token is not None and status in _OWNERS:
        return Outcome(token=token, token_owner=_OWNERS[status])
    if status is Status.subscribed:
        return Outcome(member=members.get(session, mlist, email, MemberRole.member))
    return Outcome()


def subscribe(
    session: Session,
    mlist: MailingList,
    email: str,
    display_name: str = "",
    *,
    pre_verified: bool = False,
    pre_confirmed: bool = False,
    pre_approved: bool = False,
    invitation: bool = False,
    delivery_mode: DeliveryMode | None = None,
    delivery_status: DeliveryStatus | None = None,
    actor: str = "",
    settings: WorkflowSettings = subscriptions.DEFAULTS,
) -> Outcome:
    email = normalize_email(email)
    # Mailman's own refusals, word for word: scripts match on them.
    if subscriptions.is_banned(session, mlist, email):
        raise InvalidInput("subscriber", _("Membership is banned"))
    if subscriptions.is_member(session, mlist, email):
        raise AlreadyExists("subscriber", _("Member already subscribed"))
    try:
        status, token = subscriptions.request_subscription(
            session,
            mlist,
            email,
            pre_verified=pre_verified,
            pre_confirmed=pre_confirmed,
            pre_approved=pre_approved,
            invitation=invitation,
            display_name=display_name,
            delivery_mode=delivery_mode,
            actor=actor,
            settings=settings,
        )
    except AlreadyExists:
        raise AlreadyExists("subscriber", _("Subscription request already pending")) from None
    outcome = _outcome(session, mlist, email, status, token)
    if outcome.member is not None and delivery_status is not None:
        outcome.member.delivery_status = delivery_status
    return outcome


def unsubscribe(
    session: Session,
    mlist: MailingList,
    member: Member,
    *,
    pre_confirmed: bool = True,
    pre_approved: bool = False,
    actor: str = "",
    settings: WorkflowSettings = subscriptions.DEFAULTS,
) -> Outcome:
    email = member.address.email
    if member.role is not MemberRole.member:
        # owners, moderators, nonmembers: no workflow, as in Mailman
        session.delete(member)
        session.flush()
        return Outcome()
    status, token = subscriptions.request_unsubscription(
        session,
        mlist,
        email,
        pre_confirmed=pre_confirmed,
        pre_approved=pre_approved,
        actor=actor,
        settings=settings,
    )
    return _outcome(session, mlist, email, status, token)


def get(session: Session, mlist: MailingList, token: str) -> PendingRequest:
    return subscriptions.get_pending(session, token, mlist)


def accept(
    session: Session,
    mlist: MailingList,
    token: str,
    actor: str,
    settings: WorkflowSettings = subscriptions.DEFAULTS,
) -> None:
    """Move the request on by one step: the subscriber's confirmation, or the approval."""
    pending = get(session, mlist, token)
    if pending.token_owner is TokenOwner.subscriber:
        subscriptions.confirm(session, mlist, token, actor=actor, settings=settings)
    else:
        subscriptions.moderate(session, mlist, token, "accept", actor=actor, settings=settings)


def drop(
    session: Session,
    mlist: MailingList,
    token: str,
    action: str,
    actor: str,
    reason: str = "",
    settings: WorkflowSettings = subscriptions.DEFAULTS,
) -> None:
    """reject (the person is told), discard (silently), defer/hold (left waiting)."""
    subscriptions.moderate(
        session,
        mlist,
        token,
        "defer" if action == "hold" else action,
        actor=actor,
        reason=reason,
        settings=settings,
    )
