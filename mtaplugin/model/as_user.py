"""Memberships "as the user" (Mailman's ``subscription_mode: as_user``, Postorius's
"subscribe with my primary address") follow the user's preferred address.

A membership row names one address (``Member.address_id``); the rosters, the posting
rules, the bounces and the one-click links all read that.  So when a user's preferred
address changes, through whatever surface (account page, REST, CLI, an import), their
``as_user`` memberships move to it in the same transaction; the change of the members
table then renews the list's snapshot (its generation), and the next post goes to the new
address.  A list where the new address already holds the same role keeps the membership
where it was (one row per address and role).  A user left with no preferred address keeps
their memberships where they were."""

from __future__ import annotations

from sqlalchemy import event, select
from sqlalchemy.orm import object_session

from mtaplugin.enums import SubscriptionMode
from mtaplugin.model.member import Member
from mtaplugin.model.user import User


@event.listens_for(User.preferred_address_id, "set", active_history=True)
def _follow_preferred(user: User, value: object, old: object, _initiator: object) -> None:
    session = object_session(user)
    if session is None or user.id is None or not isinstance(value, int) or value == old:
        return
    with session.no_autoflush:
        members = session.scalars(
            select(Member).where(
                Member.user_id == user.id, Member.subscription_mode == SubscriptionMode.as_user
            )
        ).all()
        for member in members:
            taken = session.scalar(
                select(Member.id).where(
                    Member.mailing_list_id == member.mailing_list_id,
                    Member.role == member.role,
                    Member.address_id == value,
                )
            )
            if taken is None:
                member.address_id = value
