"""Subscription and unsubscription requests, as Mailman's workflows run them.

A request that needs someone's word waits in ``pending_requests`` under a token:

* ``token_owner = subscriber``: the address must confirm (it is not verified yet, the list
  asks for confirmation, or it is an invitation); a confirmation notice goes out with the
  token in ``list-confirm+TOKEN@`` and in the Subject;
* ``token_owner = moderator``: the list moderates (un)subscriptions.

:func:`confirm` moves a request on by one step (confirmation, then approval), exactly as
Mailman's ``POST /lists/{list}/requests/{token}`` with ``action=accept`` does.  When no
step is left the member is added (or removed).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbound
from mtaplugin.addresses import normalize_email
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import bans, members
from mtaplugin.model import Address, AuditEntry, MailingList, Member, PendingRequest
from mtaplugin.model.base import utcnow
from mtaplugin.model.enums import (
    DeliveryMode,
    DeliveryStatus,
    MemberRole,
    RequestType,
    SubscriptionPolicy,
    TokenOwner,
)

#: how long a request waits for its confirmation or approval (Mailman: pending_request_life)
REQUEST_LIFE = timedelta(days=3)
_CONFIRMED = {SubscriptionPolicy.confirm, SubscriptionPolicy.confirm_then_moderate}
_MODERATED = {SubscriptionPolicy.moderate, SubscriptionPolicy.confirm_then_moderate}


class Banned(InvalidInput):
    pass


class AlreadyPending(AlreadyExists):
    pass


@dataclass(frozen=True)
class Outcome:
    """Either the member (done) or the token someone must act on."""

    member: Member | None = None
    token: str | None = None
    token_owner: TokenOwner | None = None


def _pending(
    session: Session,
    mlist: MailingList,
    kind: RequestType,
    email: str,
    display_name: str,
    owner: TokenOwner,
    data: dict[str, Any],
) -> PendingRequest:
    request = PendingRequest(
        token=secrets.token_hex(20),
        request_type=kind,
        token_owner=owner,
        mailing_list_id=mlist.id,
        email=email,
        display_name=display_name,
        step="confirm" if owner == TokenOwner.subscriber else "approve",
        data=data,
        expires_at=utcnow() + REQUEST_LIFE,
    )
    session.add(request)
    session.flush()
    if owner == TokenOwner.subscriber:
        _send_confirmation(session, mlist, request)
    return request


def _send_confirmation(session: Session, mlist: MailingList, request: PendingRequest) -> None:
    confirm = f"{mlist.list_name}-confirm+{request.token}@{mlist.mail_host}"
    if request.request_type == RequestType.subscription:
        what = _("subscribe {email} to {list}")
    else:
        what = _("unsubscribe {email} from {list}")
    body = _(
        "Someone asked to {what}.\n\n"
        "To confirm, reply to this message, keeping the Subject, or send a message to\n"
        "  {confirm}\n\n"
        "If you did not ask for this, ignore this message.\n"
    ).format(what=what.format(email=request.email, list=mlist.fqdn_listname), confirm=confirm)
    raw = notices.build(
        mlist.request_address,
        request.email,
        f"confirm {request.token}",
        body,
        extra={"Reply-To": confirm},
    )
    outbound.enqueue(session, mlist.bounces_address, [request.email], raw, mailing_list_id=mlist.id)


def _audit(session: Session, mlist: MailingList, actor: str, action: str, **detail: Any) -> None:
    session.add(AuditEntry(actor=actor, action=action, mailing_list_id=mlist.id, detail=detail))


def pending_for(
    session: Session, mlist: MailingList, email: str, kind: RequestType
) -> PendingRequest | None:
    return session.scalar(
        select(PendingRequest).where(
            PendingRequest.mailing_list_id == mlist.id,
            PendingRequest.email == email,
            PendingRequest.request_type == kind,
            PendingRequest.expires_at > utcnow(),
        )
    )


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
    actor: str = "rest",
) -> Outcome:
    addr = normalize_email(email, "subscriber")
    if bans.is_banned(session, mlist, addr):
        raise Banned("subscriber", _("Membership is banned"))
    address = session.scalar(select(Address).where(Address.email == addr))
    if address is not None and session.scalar(
        select(Member.id).where(
            Member.mailing_list_id == mlist.id,
            Member.role == MemberRole.member,
            Member.address_id == address.id,
        )
    ):
        raise AlreadyExists("subscriber", _("Member already subscribed"))
    if pending_for(session, mlist, addr, RequestType.subscription) is not None:
        raise AlreadyPending("subscriber", _("Subscription request already pending"))
    if address is None:
        address = Address(email=addr, original_email=email.strip(), display_name=display_name)
        session.add(address)
    if pre_verified and address.verified_on is None:
        address.verified_on = utcnow()
    session.flush()
    data = {
        "pre_approved": pre_approved,
        "delivery_mode": delivery_mode.value if delivery_mode else None,
        "delivery_status": delivery_status.value if delivery_status else None,
    }
    policy = mlist.subscription_policy
    if invitation or address.verified_on is None or (policy in _CONFIRMED and not pre_confirmed):
        request = _pending(
            session,
            mlist,
            RequestType.subscription,
            addr,
            display_name,
            TokenOwner.subscriber,
            data,
        )
        return Outcome(token=request.token, token_owner=TokenOwner.subscriber)
    if policy in _MODERATED and not pre_approved:
        request = _pending(
            session, mlist, RequestType.subscription, addr, display_name, TokenOwner.moderator, data
        )
        return Outcome(token=request.token, token_owner=TokenOwner.moderator)
    return Outcome(member=_join(session, mlist, addr, display_name, data, actor))


def _join(
    session: Session,
    mlist: MailingList,
    email: str,
    display_name: str,
    data: dict[str, Any],
    actor: str,
) -> Member:
    mode = data.get("delivery_mode")
    member = members.add(
        session,
        mlist,
        email,
        MemberRole.member,
        display_name=display_name,
        delivery_mode=DeliveryMode(mode) if mode else None,
    )
    status = data.get("delivery_status")
    if status:
        member.delivery_status = DeliveryStatus(status)
    _audit(session, mlist, actor, "member.subscribe", email=email)
    return member


def unsubscribe(
    session: Session,
    mlist: MailingList,
    member: Member,
    *,
    pre_confirmed: bool = True,
    pre_approved: bool = False,
    actor: str = "rest",
) -> Outcome:
    """Remove a member (role member) or start the unsubscription workflow."""
    email = member.address.email
    if member.role != MemberRole.member:
        session.delete(member)
        session.flush()
        _audit(session, mlist, actor, "member.remove", email=email, role=member.role.value)
        return Outcome()
    if pending_for(session, mlist, email, RequestType.unsubscription) is not None:
        raise AlreadyPending("email", _("Unsubscription request already pending"))
    policy = mlist.unsubscription_policy
    if policy in _CONFIRMED and not pre_confirmed:
        request = _pending(
            session,
            mlist,
            RequestType.unsubscription,
            email,
            member.display_name,
            TokenOwner.subscriber,
            {"pre_approved": pre_approved},
        )
        return Outcome(token=request.token, token_owner=TokenOwner.subscriber)
    if policy in _MODERATED and not pre_approved:
        request = _pending(
            session,
            mlist,
            RequestType.unsubscription,
            email,
            member.display_name,
            TokenOwner.moderator,
            {"pre_approved": False},
        )
        return Outcome(token=request.token, token_owner=TokenOwner.moderator)
    session.delete(member)
    session.flush()
    _audit(session, mlist, actor, "member.unsubscribe", email=email)
    return Outcome()


# --- acting on a request ------------------------------------------------------------------
def get(session: Session, mlist: MailingList, token: str) -> PendingRequest:
    request = session.scalar(
        select(PendingRequest).where(
            PendingRequest.mailing_list_id == mlist.id,
            PendingRequest.token == token,
            PendingRequest.request_type.in_([RequestType.subscription, RequestType.unsubscription]),
        )
    )
    if request is None:
        raise NotFound(
            "token", _("no request {token} on {list}").format(token=token, list=mlist.fqdn_listname)
        )
    return request


def confirm(session: Session, mlist: MailingList, token: str, actor: str = "rest") -> Outcome:
    """Move the request on by one step; the member is added or removed after the last."""
    request = get(session, mlist, token)
    if request.step == "confirm":
        address = session.scalar(select(Address).where(Address.email == request.email))
        if address is not None and address.verified_on is None:
            address.verified_on = utcnow()
        policy = (
            mlist.subscription_policy
            if request.request_type == RequestType.subscription
            else mlist.unsubscription_policy
        )
        if policy in _MODERATED and not request.data.get("pre_approved"):
            request.step = "approve"
            request.token_owner = TokenOwner.moderator
            request.expires_at = utcnow() + REQUEST_LIFE
            session.flush()
            return Outcome(token=request.token, token_owner=TokenOwner.moderator)
    return _finish(session, mlist, request, actor)


def _finish(session: Session, mlist: MailingList, request: PendingRequest, actor: str) -> Outcome:
    email, name, data = request.email, request.display_name, dict(request.data)
    kind = request.request_type
    session.delete(request)
    session.flush()
    if kind == RequestType.subscription:
        return Outcome(member=_join(session, mlist, email, name, data, actor))
    member = session.scalar(
        select(Member)
        .join(Address, Address.id == Member.address_id)
        .where(
            Member.mailing_list_id == mlist.id,
            Member.role == MemberRole.member,
            Address.email == email,
        )
    )
    if member is not None:
        session.delete(member)
        session.flush()
    _audit(session, mlist, actor, "member.unsubscribe", email=email)
    return Outcome()


def drop(
    session: Session, mlist: MailingList, token: str, action: str, actor: str, reason: str = ""
) -> None:
    """``reject`` or ``discard`` a request; ``defer``/``hold`` leave it waiting."""
    request = get(session, mlist, token)
    if action in ("defer", "hold"):
        return
    _audit(
        session,
        mlist,
        actor,
        f"request.{action}",
        email=request.email,
        type=request.request_type.value,
        reason=reason,
    )
    if action == "reject":
        _send_refusal(session, mlist, request, reason)
    session.delete(request)
    session.flush()


def _send_refusal(
    session: Session, mlist: MailingList, request: PendingRequest, reason: str
) -> None:
    """Tell the person their request was refused -- only at a verified address, which
    asked for it (otherwise the notice could be backscatter)."""
    verified = session.scalar(select(Address.verified_on).where(Address.email == request.email))
    if verified is None:
        return
    if request.request_type == RequestType.subscription:
        what = _("Your request to join {list} was refused.")
    else:
        what = _("Your request to leave {list} was refused.")
    body = what.format(list=mlist.fqdn_listname) + "\n"
    if reason:
        body += "\n" + _("Reason: {reason}").format(reason=reason) + "\n"
    body += "\n" + _("Questions go to {owner}.").format(owner=mlist.owner_address) + "\n"
    raw = notices.build(
        mlist.request_address,
        request.email,
        _("Request to {list} refused").format(list=mlist.fqdn_listname),
        body,
    )
    outbound.enqueue(session, mlist.bounces_address, [request.email], raw, mailing_list_id=mlist.id)
