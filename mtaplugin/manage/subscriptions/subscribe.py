"""Joining a list: one address (:func:`request_subscription`) or many at once
(:func:`mass_subscribe`, the web admin's mass subscription)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import DeliveryMode, RequestType
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.manage import bans, claims, members, pending
from mtaplugin.manage.subscriptions.steps import (
    DEFAULTS,
    AlreadyMember,
    AlreadyPending,
    Announcer,
    Banned,
    Status,
    Step,
    WorkflowSettings,
    announce,
    ask,
    audit,
    audit_many,
    mass,
    notify_staff_of,
    request_data,
    steps_for,
)
from mtaplugin.manage.users import new_user_for
from mtaplugin.model import Address, MailingList, User
from mtaplugin.notices.templates import overrides_kept
from mtaplugin.vocabulary.addresses import normalize_email, split


def is_own_address(mlist: MailingList, email: str) -> bool:
    """``list@`` or ``list-anything@`` of the list's domain: a list never joins itself."""
    local, domain = split(email)
    return domain == mlist.mail_host and (
        local == mlist.list_name or local.startswith(f"{mlist.list_name}-")
    )


def check_subscriber(
    session: Session, mlist: MailingList, email: str, settings: WorkflowSettings
) -> None:
    """Refuse what may never join: the list's own addresses, a banned address, a member,
    an address whose request already waits."""
    if is_own_address(mlist, email):
        raise InvalidInput("email", _("a list cannot subscribe its own addresses"))
    if bans.is_banned(session, mlist, email):
        raise Banned(email, mlist)
    if members.is_member(session, mlist, email):
        raise AlreadyMember(email, mlist)
    if pending.for_email(session, mlist, email, RequestType.subscription, settings.now()):
        raise AlreadyPending(email, RequestType.subscription)


def with_user(session: Session, email: str, now: datetime, display_name: str = "") -> Address:
    """The subscriber's address, linked to a user: Mailman's subscription workflow starts
    by creating both when they do not exist (the address unverified, the user without a
    password and not yet with a preferred address), so that every subscriber appears among
    the users (Postorius's Users page)."""
    address = session.scalar(select(Address).where(Address.email == email))
    if address is None:
        address = Address(
            email=email, original_email=email, display_name=display_name, registered_on=now
        )
        session.add(address)
    else:
        # an account that only claims the address (unverified) is not the subscriber's
        claims.drop_claim(session, address, now)
    if address.user_id is None:
        new_user_for(session, address, now)
    session.flush()
    return address


def request_subscription(
    session: Session,
    mlist: MailingList,
    email: str,
    *,
    pre_verified: bool = False,
    pre_confirmed: bool = False,
    pre_approved: bool = False,
    invitation: bool = False,
    must_confirm: bool = False,
    display_name: str = "",
    delivery_mode: DeliveryMode | None = None,
    send_welcome_message: bool | None = None,
    send_admin_notice: bool | None = None,
    language: str | None = None,
    confirm_url: str = "",
    actor: str = "",
    settings: WorkflowSettings = DEFAULTS,
) -> tuple[Status, str | None]:
    """Start (and, where the policy allows, finish) a subscription.

    ``pre_verified``/``pre_confirmed``/``pre_approved`` are Mailman's: the caller vouches
    for the address, for the person's confirmation, for the moderators' approval.
    ``must_confirm``: the requester has not shown the address is theirs (the public web
    page), so it is confirmed whatever the policy.  ``send_welcome_message`` and
    ``send_admin_notice`` override the list's ``send_welcome_message`` and
    ``admin_notify_mchanges`` (None: the list decides).  ``language`` is the one the
    person asked for; it words the notices and becomes the member's preference.
    ``confirm_url`` (the web page's ``.../confirm/``) adds a link to the confirmation.

    Returns ``(Status.subscribed, None)`` or a pending status with the token of the step
    that waits.  Raises :class:`~.steps.Banned` or :class:`InvalidInput` (the list's own
    address), :class:`~.steps.AlreadyMember` or :class:`~.steps.AlreadyPending`; nothing
    is stored then.
    """
    email = normalize_email(email)
    members.check_delivery_mode(delivery_mode)
    check_subscriber(session, mlist, email, settings)
    address = with_user(session, email, settings.now(), display_name)
    if pre_verified:
        # the caller vouches for the address (Mailman's pre_verified): it is verified now
        claims.vouch(session, address, settings.now())
    verified = pre_verified or address.verified_on is not None
    data = request_data(
        actor,
        language,
        confirm_url,
        delivery_mode=delivery_mode.value if delivery_mode else None,
        send_welcome_message=send_welcome_message,
        send_admin_notice=send_admin_notice,
    )
    if invitation:
        # the invitee accepts by confirming; the inviter's word stands for the moderators
        data["invitation"] = True
        steps: tuple[Step, ...] = (Step.confirm,)
    else:
        steps = steps_for(
            mlist.subscription_policy,
            confirmed=pre_confirmed,
            approved=pre_approved,
            must_confirm=must_confirm or not verified,
        )
    if steps:
        kind = RequestType.subscription
        return ask(session, mlist, email, kind, steps, data, settings, display_name)
    subscribe(session, mlist, email, display_name, data, actor or email, settings)
    return Status.subscribed, None


def subscribe(
    session: Session,
    mlist: MailingList,
    email: str,
    display_name: str,
    data: dict[str, Any],
    actor: str,
    settings: WorkflowSettings,
) -> None:
    """The last step: the member row, the audit entry, the welcome and the owners'
    notice, as the list (or the request's flags) say."""
    mode = data.get("delivery_mode")
    member = members.add(
        session,
        mlist,
        email,
        display_name=display_name,
        delivery_mode=DeliveryMode(mode) if mode else None,
        clock=settings.clock,
    )
    if data.get("language"):
        member.preferred_language = str(data["language"])
    address = session.get(Address, member.address_id)
    if address is not None:
        claims.vouch(session, address, settings.now())
    audit(session, mlist, actor, "member.subscribe", email, settings.now())
    announce(session, mlist, email, "subscribe", data, settings)


@dataclass(frozen=True)
class MassSubscription:
    added: tuple[str, ...]
    #: members already
    already: int
    #: refused: banned, or the list's own address
    refused: tuple[str, ...]


def mass_subscribe(
    session: Session,
    mlist: MailingList,
    entries: Sequence[tuple[str, str]],
    *,
    delivery_mode: DeliveryMode | None = None,
    send_welcome_message: bool | None = None,
    send_admin_notice: bool | None = None,
    actor: str = "",
    settings: WorkflowSettings = DEFAULTS,
    progress: Callable[[int], None] | None = None,
    batch: str = "",
) -> MassSubscription:
    """Subscribe validated ``(email, name)`` entries at once, as an administrator does
    (pre-verified, confirmed and approved), in batches: banned addresses are left out
    (and named), members are kept, and each new member gets the welcome one subscription
    gives (made once per language: :class:`~.steps.Announcer`).  The owners get one
    notice naming every new member (Mailman 2.1), not one per address.  ``progress`` is
    told how many entries each batch did (the refused ones first).  ``batch``: the web
    page's name for the whole mass subscription this call is a chunk of, kept in the
    audit entries (:mod:`~.batches`)."""
    members.check_delivery_mode(delivery_mode)
    ban_list = bans.ban_list(session, mlist)
    allowed: list[tuple[str, str]] = []
    refused: list[str] = []
    for email, name in entries:
        if is_own_address(mlist, email) or ban_list.matches(email):
            refused.append(email)
        else:
            allowed.append((email, name))
    if refused and progress is not None:
        progress(len(refused))
    data = {"send_welcome_message": send_welcome_message}
    added: list[str] = []
    already = 0
    with overrides_kept():  # the list's welcome text looked up once, not per member
        welcomes = Announcer(session, mlist, "subscribe", data, settings.clock)
        for start in range(0, len(allowed), members.BATCH):
            part = allowed[start : start + members.BATCH]
            result = members.add_many(
                session, mlist, part, delivery_mode=delivery_mode, clock=settings.clock
            )
            new = result.added_emails
            with_users(session, new, settings.now())
            audit_many(
                session, mlist, actor, "member.subscribe", new, settings.now(), **mass(batch)
            )
            welcomes.send(new)
            added.extend(new)
            already += result.already
            if progress is not None:
                progress(len(part))
    notify_staff_of(session, mlist, settings, added, "subscribe", send_admin_notice)
    session.flush()
    return MassSubscription(tuple(added), already, tuple(refused))


def with_users(session: Session, emails: Sequence[str], now: datetime) -> None:
    """:func:`with_user` for each of ``emails`` (addresses that exist), a batch at once:
    a claim on one is dropped, and each without a user gets one."""
    addresses = session.scalars(select(Address).where(Address.email.in_(emails))).all()
    for address in addresses:
        claims.drop_claim(session, address, now)
    lonely = [a for a in addresses if a.user_id is None]
    users = [User(created_on=now) for _a in lonely]
    session.add_all(users)
    session.flush()
    for address, user in zip(lonely, users, strict=True):
        address.user_id = user.id
    session.flush()
