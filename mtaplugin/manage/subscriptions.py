"""Subscription and unsubscription workflows, as state machines persisted in SQL.

Shared by the email commands, the ``-join``/``-leave``/``-confirm`` addresses and REST
(``POST /members`` with pre_verified/pre_confirmed/pre_approved/invitation, the
``requests`` resources).  Each waiting step is a :class:`~mtaplugin.model.PendingRequest`:

=========== ============ ===================================================================
step        token_owner  waits for
=========== ============ ===================================================================
confirm     subscriber   the person to reply to ``list-confirm+TOKEN@`` (or send
                         ``confirm TOKEN``); expires after ``pending_life`` (3 days)
moderate    moderator    a moderator's accept/reject/discard (REST, or an authenticated
                         reply); expires after ``moderator_life`` (180 days)
=========== ============ ===================================================================

Policies (``subscription_policy`` / ``unsubscription_policy``): ``open`` acts at once,
``confirm`` waits for the person, ``moderate`` for a moderator, ``confirm_then_moderate``
for both, in that order.  An address that was never verified is confirmed first whatever
the policy (unless ``pre_verified``).  An invitation (``invitation=True``) sends
``list:user:action:invite`` and subscribes when the invitee accepts, without moderation.

Tokens come from :mod:`secrets` (160 bits, lower-case hex so that they survive the
lower-casing of addresses), are single use, and are replaced by a new one at every step, so
a token seen by the subscriber cannot approve the moderation step.  Everything a step does
(the member row, the notices in the outbox, the audit entry) is in the caller's
transaction.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from mtaplugin import outbox
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import members
from mtaplugin.model import Address, AuditEntry, Ban, MailingList, Member, PendingRequest
from mtaplugin.model.base import utcnow
from mtaplugin.model.enums import (
    DeliveryMode,
    MemberRole,
    RequestType,
    SubscriptionPolicy,
    TokenOwner,
)
from mtaplugin.notices import membership
from mtaplugin.posting.addresses import normalize_email, split

CONFIRM = "confirm"
MODERATE = "moderate"
#: what a moderator may do with a request (REST's names; "approve" is an alias of accept)
MODERATOR_ACTIONS = ("accept", "reject", "discard", "defer")


class Status(StrEnum):
    subscribed = "subscribed"
    unsubscribed = "unsubscribed"
    #: a confirmation was sent; the token is the subscriber's
    pending_confirmation = "pending_confirmation"
    #: waiting for a moderator; the token is the moderator's
    pending_approval = "pending_approval"
    refused = "refused"
    discarded = "discarded"
    deferred = "deferred"


@dataclass(frozen=True)
class WorkflowSettings:
    #: how long a subscriber's token is valid (Mailman's pending_request_life)
    pending_life: timedelta = timedelta(days=3)
    #: how long a moderator's token is valid (Mailman's moderator_request_life)
    moderator_life: timedelta = timedelta(days=180)
    #: gets the moderators' notices of a list that has no owner or moderator
    site_owner: str = ""

    @classmethod
    def from_settings(cls, settings: Any) -> WorkflowSettings:
        return cls(
            pending_life=timedelta(seconds=settings.rules.pending_request_life),
            moderator_life=timedelta(seconds=settings.rules.moderator_request_life),
            site_owner=settings.site.site_owner,
        )


DEFAULTS = WorkflowSettings()


# --- helpers ----------------------------------------------------------------------------
def new_token() -> str:
    return secrets.token_hex(20)


def staff(session: Session, mlist: MailingList, site_owner: str = "") -> list[str]:
    """Owners and moderators of the list; the site owner when it has none."""
    found = sorted(
        set(
            session.scalars(
                select(Address.email)
                .join(Member, Member.address_id == Address.id)
                .where(
                    Member.mailing_list_id == mlist.id,
                    Member.role.in_([MemberRole.owner, MemberRole.moderator]),
                )
            )
        )
    )
    return found or ([site_owner] if site_owner else [])


def language_of(
    session: Session, mlist: MailingList, email: str, fallback: str | None = None
) -> str:
    """The language a person reads: their membership's, address's or user's preference,
    else ``fallback`` (e.g. what their mail asked for), else the list's
    preferred_language."""
    row = session.execute(
        select(Member.preferred_language, Address.preferred_language, Address.user_id)
        .select_from(Address)
        .outerjoin(
            Member,
            (Member.address_id == Address.id)
            & (Member.mailing_list_id == mlist.id)
            & (Member.role == MemberRole.member),
        )
        .where(Address.email == email)
    ).first()
    if row is not None:
        if row[0] or row[1]:
            return str(row[0] or row[1])
        if row[2] is not None:
            from mtaplugin.model import User

            lang = session.scalar(select(User.preferred_language).where(User.id == row[2]))
            if lang:
                return lang
    return fallback or mlist.preferred_language or "en"


def is_banned(session: Session, mlist: MailingList, email: str) -> bool:
    rows = session.execute(
        select(Ban.email, Ban.is_regex).where(
            or_(Ban.mailing_list_id == mlist.id, Ban.mailing_list_id.is_(None)),
            or_(Ban.email == email, Ban.is_regex.is_(True), Ban.email.startswith("^")),
        )
    ).all()
    for pattern, is_regex in rows:
        if not is_regex and not pattern.startswith("^"):
            return True
        try:
            if re.match(pattern, email, re.IGNORECASE):
                return True
        except re.error:
            continue
    return False


def is_member(session: Session, mlist: MailingList, email: str) -> bool:
    return (
        session.scalar(
            select(Member.id)
            .join(Address, Address.id == Member.address_id)
            .where(
                Member.mailing_list_id == mlist.id,
                Member.role == MemberRole.member,
                Address.email == email,
            )
        )
        is not None
    )


def _audit(
    session: Session, mlist: MailingList, actor: str, action: str, email: str, **extra: Any
) -> None:
    session.add(
        AuditEntry(
            actor=actor or email,
            action=action,
            mailing_list_id=mlist.id,
            detail={"email": email, **extra},
        )
    )


def _send(session: Session, mlist: MailingList, recipients: list[str], raw: bytes) -> None:
    if recipients:
        outbox.enqueue(
            session, mlist.bounces_address, recipients, raw, kind="notice", mailing_list_id=mlist.id
        )


def _pending_for(
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


def _new_pending(
    session: Session,
    mlist: MailingList,
    email: str,
    kind: RequestType,
    step: str,
    data: dict[str, Any],
    settings: WorkflowSettings,
    display_name: str = "",
) -> PendingRequest:
    owner = TokenOwner.moderator if step == MODERATE else TokenOwner.subscriber
    life = settings.moderator_life if step == MODERATE else settings.pending_life
    pending = PendingRequest(
        token=new_token(),
        request_type=kind,
        token_owner=owner,
        mailing_list_id=mlist.id,
        email=email,
        display_name=display_name,
        step=step,
        data=data,
        expires_at=utcnow() + life,
    )
    session.add(pending)
    session.flush()
    return pending


def _ask(
    session: Session,
    mlist: MailingList,
    email: str,
    kind: RequestType,
    step: str,
    data: dict[str, Any],
    settings: WorkflowSettings,
    display_name: str = "",
) -> tuple[Status, str]:
    """Store the step and send its notice: the confirmation or the moderators' request."""
    pending = _new_pending(session, mlist, email, kind, step, data, settings, display_name)
    verb = "unsubscribe" if kind is RequestType.unsubscription else "subscribe"
    if step == CONFIRM:
        notice = "invite" if data.get("invitation") else verb
        _send(
            session,
            mlist,
            [email],
            membership.confirmation(
                session,
                mlist,
                email,
                pending.token,
                pending.expires_at,
                language_of(session, mlist, email, data.get("language")),
                notice,
            ),
        )
        return Status.pending_confirmation, pending.token
    _send(
        session,
        mlist,
        staff(session, mlist, settings.site_owner),
        membership.moderator_request(session, mlist, email, pending.token, verb),
    )
    return Status.pending_approval, pending.token


# --- subscription -----------------------------------------------------------------------
def _check_subscriber(session: Session, mlist: MailingList, email: str) -> None:
    local, domain = split(email)
    if domain == mlist.mail_host and (
        local == mlist.list_name or local.startswith(f"{mlist.list_name}-")
    ):
        raise InvalidInput("email", _("a list cannot subscribe its own addresses"))
    if is_banned(session, mlist, email):
        raise InvalidInput(
            "email",
            _("{email} is banned from {list}").format(email=email, list=mlist.fqdn_listname),
        )
    if is_member(session, mlist, email):
        raise AlreadyExists(
            "email",
            _("{email} is already a member of {list}").format(
                email=email, list=mlist.fqdn_listname
            ),
        )
    if _pending_for(session, mlist, email, RequestType.subscription) is not None:
        raise AlreadyExists(
            "email",
            _("a subscription request for {email} is already pending").format(email=email),
        )


def request_subscription(
    session: Session,
    mlist: MailingList,
    email: str,
    *,
    pre_verified: bool = False,
    pre_confirmed: bool = False,
    pre_approved: bool = False,
    invitation: bool = False,
    display_name: str = "",
    delivery_mode: DeliveryMode | None = None,
    send_welcome_message: bool | None = None,
    language: str | None = None,
    actor: str = "",
    settings: WorkflowSettings = DEFAULTS,
) -> tuple[Status, str | None]:
    """Start (and, where the policy allows, finish) a subscription.

    ``language`` is the one the person asked for (a web form, their mail's
    ``Accept-Language``); it words the notices and becomes the member's preference.

    Returns ``(Status.subscribed, None)`` or a pending status with the token of the step
    that waits.  Raises :class:`InvalidInput` (banned, the list's own address),
    :class:`AlreadyExists` (a member already, or a request pending); nothing changes then.
    """
    email = normalize_email(email)
    members.check_delivery_mode(delivery_mode)
    _check_subscriber(session, mlist, email)
    policy = mlist.subscription_policy
    address = session.scalar(select(Address).where(Address.email == email))
    if pre_verified and (address is None or address.verified_on is None):
        # the caller vouches for the address (Mailman's pre_verified): it is verified now
        address = address or members.get_or_create_address(session, email, display_name)
        address.verified_on = utcnow()
        session.flush()
    verified = pre_verified or (address is not None and address.verified_on is not None)
    data: dict[str, Any] = {
        "delivery_mode": delivery_mode.value if delivery_mode else None,
        "send_welcome_message": send_welcome_message,
        "language": language,
        "actor": actor,
    }
    if invitation:
        data.update(invitation=True, approved=True)
        return _ask(
            session, mlist, email, RequestType.subscription, CONFIRM, data, settings, display_name
        )
    needs_confirm = not verified or (
        not pre_confirmed
        and policy in (SubscriptionPolicy.confirm, SubscriptionPolicy.confirm_then_moderate)
    )
    needs_approval = not pre_approved and policy in (
        SubscriptionPolicy.moderate,
        SubscriptionPolicy.confirm_then_moderate,
    )
    data["approved"] = not needs_approval
    if needs_confirm:
        return _ask(
            session, mlist, email, RequestType.subscription, CONFIRM, data, settings, display_name
        )
    if needs_approval:
        return _ask(
            session, mlist, email, RequestType.subscription, MODERATE, data, settings, display_name
        )
    _subscribe(session, mlist, email, display_name, data, actor or email, settings)
    return Status.subscribed, None


def _subscribe(
    session: Session,
    mlist: MailingList,
    email: str,
    display_name: str,
    data: dict[str, Any],
    actor: str,
    settings: WorkflowSettings,
) -> None:
    mode = data.get("delivery_mode")
    member = members.add(
        session,
        mlist,
        email,
        display_name=display_name,
        delivery_mode=DeliveryMode(mode) if mode else None,
    )
    if data.get("language"):
        member.preferred_language = str(data["language"])
    address = session.get(Address, member.address_id)
    if address is not None and address.verified_on is None:
        address.verified_on = utcnow()
    _audit(session, mlist, actor, "member.subscribe", email)
    welcome = data.get("send_welcome_message")
    if welcome is None:
        welcome = mlist.send_welcome_message
    if welcome:
        _send(
            session,
            mlist,
            [email],
            membership.welcome(
                session, mlist, email, language_of(session, mlist, email, data.get("language"))
            ),
        )
    if mlist.admin_notify_mchanges:
        _send(
            session,
            mlist,
            staff(session, mlist, settings.site_owner),
            membership.membership_change(session, mlist, email, "subscribe"),
        )


# --- unsubscription ---------------------------------------------------------------------
def request_unsubscription(
    session: Session,
    mlist: MailingList,
    email: str,
    *,
    pre_confirmed: bool = False,
    pre_approved: bool = False,
    language: str | None = None,
    actor: str = "",
    settings: WorkflowSettings = DEFAULTS,
) -> tuple[Status, str | None]:
    """Start (or finish) removing a member; raises :class:`NotFound` for a non-member."""
    email = normalize_email(email)
    if not is_member(session, mlist, email):
        raise NotFound(
            "email",
            _("{email} is not a member of {list}").format(email=email, list=mlist.fqdn_listname),
        )
    if _pending_for(session, mlist, email, RequestType.unsubscription) is not None:
        raise AlreadyExists(
            "email",
            _("an unsubscription request for {email} is already pending").format(email=email),
        )
    policy = mlist.unsubscription_policy
    needs_confirm = not pre_confirmed and policy in (
        SubscriptionPolicy.confirm,
        SubscriptionPolicy.confirm_then_moderate,
    )
    needs_approval = not pre_approved and policy in (
        SubscriptionPolicy.moderate,
        SubscriptionPolicy.confirm_then_moderate,
    )
    data: dict[str, Any] = {"approved": not needs_approval, "actor": actor, "language": language}
    if needs_confirm:
        return _ask(session, mlist, email, RequestType.unsubscription, CONFIRM, data, settings)
    if needs_approval:
        return _ask(session, mlist, email, RequestType.unsubscription, MODERATE, data, settings)
    _unsubscribe(session, mlist, email, actor or email, settings)
    return Status.unsubscribed, None


def _unsubscribe(
    session: Session, mlist: MailingList, email: str, actor: str, settings: WorkflowSettings
) -> None:
    language = language_of(session, mlist, email)
    members.remove(session, mlist, email, MemberRole.member)
    _audit(session, mlist, actor, "member.unsubscribe", email)
    if mlist.send_goodbye_message:
        _send(session, mlist, [email], membership.goodbye(session, mlist, email, language))
    if mlist.admin_notify_mchanges:
        _send(
            session,
            mlist,
            staff(session, mlist, settings.site_owner),
            membership.membership_change(session, mlist, email, "unsubscribe"),
        )


# --- tokens -----------------------------------------------------------------------------
def get_pending(session: Session, token: str, mlist: MailingList | None = None) -> PendingRequest:
    """The live request of ``token`` (on ``mlist``, if given); an expired one is removed."""
    token = token.strip().lower()
    query = select(PendingRequest).where(PendingRequest.token == token)
    if mlist is not None:
        query = query.where(PendingRequest.mailing_list_id == mlist.id)
    pending = session.scalar(query) if token else None
    if pending is not None and pending.expires_at <= utcnow():
        session.delete(pending)
        session.flush()
        pending = None
    if pending is None:
        raise NotFound("token", _("no pending request has this token (or it has expired)"))
    return pending


def confirm(
    session: Session,
    mlist: MailingList,
    token: str,
    *,
    actor: str = "",
    settings: WorkflowSettings = DEFAULTS,
) -> tuple[Status, str | None]:
    """The subscriber's confirmation: the token proves the address gets the list's mail."""
    pending = get_pending(session, token, mlist)
    if pending.token_owner is not TokenOwner.subscriber or pending.step != CONFIRM:
        raise InvalidInput("token", _("this token waits for a moderator, not for you"))
    email, data, kind = pending.email, dict(pending.data), pending.request_type
    display_name = pending.display_name
    session.delete(pending)
    session.flush()
    address = session.scalar(select(Address).where(Address.email == email))
    if address is not None and address.verified_on is None:
        address.verified_on = utcnow()
    who = actor or email
    if kind is RequestType.subscription:
        if is_member(session, mlist, email):
            raise AlreadyExists(
                "email",
                _("{email} is already a member of {list}").format(
                    email=email, list=mlist.fqdn_listname
                ),
            )
        if not data.get("approved"):
            return _ask(session, mlist, email, kind, MODERATE, data, settings, display_name)
        _subscribe(session, mlist, email, display_name, data, who, settings)
        return Status.subscribed, None
    if kind is RequestType.unsubscription:
        if not is_member(session, mlist, email):
            raise NotFound(
                "email",
                _("{email} is not a member of {list}").format(
                    email=email, list=mlist.fqdn_listname
                ),
            )
        if not data.get("approved"):
            return _ask(session, mlist, email, kind, MODERATE, data, settings)
        _unsubscribe(session, mlist, email, who, settings)
        return Status.unsubscribed, None
    raise InvalidInput("token", _("this token is not a subscription request"))


def moderate(
    session: Session,
    mlist: MailingList,
    token: str,
    action: str,
    *,
    actor: str,
    reason: str = "",
    settings: WorkflowSettings = DEFAULTS,
) -> Status:
    """A moderator's decision on a (un)subscription request: accept, reject (the person is
    told, with ``reason``), discard (silently), defer (left waiting)."""
    action = "accept" if action == "approve" else action
    if action not in MODERATOR_ACTIONS:
        raise InvalidInput(
            "action",
            _("unknown action {action!r}; choose one of: {choices}").format(
                action=action, choices=", ".join(MODERATOR_ACTIONS)
            ),
        )
    pending = get_pending(session, token, mlist)
    if pending.request_type not in (RequestType.subscription, RequestType.unsubscription):
        raise InvalidInput("token", _("this token is not a subscription request"))
    email, kind = pending.email, pending.request_type
    request = "subscription" if kind is RequestType.subscription else "unsubscription"
    if action == "defer":
        _audit(session, mlist, actor, f"{request}.defer", email)
        return Status.deferred
    if action == "accept" and pending.step != MODERATE:
        raise InvalidInput("token", _("this request waits for the person's confirmation first"))
    data, display_name = dict(pending.data), pending.display_name
    session.delete(pending)
    session.flush()
    if action == "accept":
        if kind is RequestType.subscription:
            if is_member(session, mlist, email):
                raise AlreadyExists(
                    "email",
                    _("{email} is already a member of {list}").format(
                        email=email, list=mlist.fqdn_listname
                    ),
                )
            _subscribe(session, mlist, email, display_name, data, actor, settings)
            return Status.subscribed
        if is_member(session, mlist, email):
            _unsubscribe(session, mlist, email, actor, settings)
        return Status.unsubscribed
    _audit(session, mlist, actor, f"{request}.{action}", email, reason=reason)
    if action == "reject" and _verified(session, email):
        # Only an address shown to be the person's hears of it: a refusal mailed to an
        # address someone else typed in would be backscatter.
        _send(
            session,
            mlist,
            [email],
            membership.refused(
                session,
                mlist,
                email,
                request,
                reason.strip() or _("no reason was given"),
                language_of(session, mlist, email, data.get("language")),
            ),
        )
    return Status.refused if action == "reject" else Status.discarded


def _verified(session: Session, email: str) -> bool:
    address = session.scalar(select(Address).where(Address.email == email))
    return address is not None and address.verified_on is not None


def pending_requests(
    session: Session,
    mlist: MailingList,
    request_type: RequestType | None = None,
    token_owner: TokenOwner | None = None,
) -> list[PendingRequest]:
    """The live (un)subscription requests of a list, oldest first (REST ``requests``)."""
    query = select(PendingRequest).where(
        PendingRequest.mailing_list_id == mlist.id,
        PendingRequest.expires_at > utcnow(),
        PendingRequest.request_type.in_(
            [request_type]
            if request_type
            else [RequestType.subscription, RequestType.unsubscription]
        ),
    )
    if token_owner is not None:
        query = query.where(PendingRequest.token_owner == token_owner)
    return list(session.scalars(query.order_by(PendingRequest.created_at, PendingRequest.id)))


def expire(session: Session, now: datetime | None = None) -> int:
    """Remove every expired request; returns how many."""
    result = session.execute(
        delete(PendingRequest).where(PendingRequest.expires_at <= (now or utcnow()))
    )
    return int(getattr(result, "rowcount", 0) or 0)
