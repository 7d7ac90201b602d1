"""One address added to or removed from a list's roster by an administrator (the web's
members page, ``mtaplugin members add|remove``).

A member joins and leaves through the subscription workflow, vouched for by the
administrator (Mailman's ``pre_verified``, ``pre_confirmed``, ``pre_approved``): bans
hold, and the welcome, goodbye and owners' notices go as the flags or the list say.  An
owner, moderator or nonmember is a roster entry, without notices.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from mtaplugin.enums import DeliveryMode, MemberRole
from mtaplugin.manage import members, subscriptions
from mtaplugin.manage.subscriptions import DEFAULTS, WorkflowSettings
from mtaplugin.model import MailingList


@dataclass(frozen=True)
class Administrator:
    """Who changes which list's roster, with which workflow settings: what :func:`add`
    and :func:`remove` take (the web's members page, the CLI and an account's deletion
    each build one)."""

    session: Session
    mlist: MailingList
    actor: str = ""
    settings: WorkflowSettings = DEFAULTS


def add(
    by: Administrator,
    email: str,
    role: MemberRole,
    *,
    display_name: str = "",
    delivery_mode: DeliveryMode | None = None,
    send_welcome_message: bool | None = None,
    send_admin_notice: bool | None = None,
) -> None:
    """Add ``email`` as ``role`` of the list (the notices' flags: None, the list decides)."""
    session, mlist, settings = by.session, by.mlist, by.settings
    if role is not MemberRole.member:
        clock = settings.clock
        members.add(session, mlist, email, role, display_name, delivery_mode, clock=clock)
        return
    subscriptions.request_subscription(
        session,
        mlist,
        email,
        pre_verified=True,
        pre_confirmed=True,
        pre_approved=True,
        display_name=display_name,
        delivery_mode=delivery_mode,
        send_welcome_message=send_welcome_message,
        send_admin_notice=send_admin_notice,
        actor=by.actor,
        settings=settings,
    )


def remove(
    by: Administrator,
    email: str,
    role: MemberRole,
    *,
    send_goodbye_message: bool | None = None,
    send_admin_notice: bool | None = None,
) -> None:
    """Remove ``email`` as ``role`` of the list."""
    if role is not MemberRole.member:
        members.remove(by.session, by.mlist, email, role)
        return
    subscriptions.request_unsubscription(
        by.session,
        by.mlist,
        email,
        pre_confirmed=True,
        pre_approved=True,
        send_goodbye_message=send_goodbye_message,
        send_admin_notice=send_admin_notice,
        actor=by.actor,
        settings=by.settings,
    )
