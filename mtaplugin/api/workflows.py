"""Mailman's REST words for the subscription workflow (:mod:`mtaplugin.manage.subscriptions`,
the one implementation every other way in uses too): nothing but the mapping.

REST answers 201 with the member, or 202 with ``{token, token_owner}``; the workflow's
refusals become Mailman's own texts (scripts match on them).  A moderator's ``accept`` on a
request moves it on by one step, whoever holds the token (Mailman's
``POST /lists/{list}/requests/{token}``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from mtaplugin.errors import AlreadyExists, InvalidInput
from mtaplugin.i18n import _
from mtaplugin.manage import members, subscriptions
from mtaplugin.manage.subscriptions import (
    DEFAULTS,
    AlreadyMember,
    AlreadyPending,
    Banned,
    Status,
    WorkflowSettings,
)
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
    send_welcome_message: bool | None = None,
    actor: str = "",
    settings: WorkflowSettings = DEFAULTS,
) -> Outcome:
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
            send_welcome_message=send_welcome_message,
            actor=actor,
            settings=settings,
        )
    except Banned:
        raise InvalidInput("subscriber", _("Membership is banned")) from None
    except AlreadyMember:
        raise AlreadyExists("subscriber", _("Member already subscribed")) from None
    except AlreadyPending:
        raise AlreadyExists("subscriber", _("Subscription request already pending")) from None
    outcome = _outcome(session, mlist, normalize_email(email), status, token)
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
    settings: WorkflowSettings = DEFAULTS,
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


def get(
    session: Session, mlist: MailingList, token: str, settings: WorkflowSettings = DEFAULTS
) -> PendingRequest:
    return subscriptions.get_pending(session, token, mlist, settings)


def accept(
    session: Session,
    mlist: MailingList,
    token: str,
    actor: str,
    settings: WorkflowSettings = DEFAULTS,
) -> None:
    """Move the request on by one step: the subscriber's confirmation, or the approval."""
    if get(session, mlist, token, settings).token_owner is TokenOwner.subscriber:
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
    settings: WorkflowSettings = DEFAULTS,
) -> None:
    """reject (the person is told), discard (silently), defer/hold (left waiting)."""
    action = "defer" if action == "hold" else action
    subscriptions.moderate(
        session, mlist, token, action, actor=actor, reason=reason, settings=settings
    )
