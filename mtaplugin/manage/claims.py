"""Unverified addresses on someone's account: claims, not proof (finding M3).

A user may add a new address to their own user over REST; until a mailed link shows the
address is theirs (the web account page, :mod:`mtaplugin.manage.accounts`), it is only a
**claim**: it grants no role (REST and web count verified addresses only), no log-in, no
password reset, no "my lists".  Whoever later shows the address is theirs from outside
that account -- a confirmation by mail, an owner or the site admin adding it to a list, a
sign-up -- breaks the claim: the address leaves the claiming account, with the claimer's
display name and preferences for it, before it is verified or given a role.

A claim is an unverified address on a user that is somebody's account: a user with a
password or with another, verified address.  An address on a user made for it alone (a
subscriber's user, Mailman's passwordless user of an import or of Postorius) is that
person's own record, and stays.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.model import Address, AuditEntry, User
from mtaplugin.model.preferences import PREFERENCE_KEYS


def is_claim(session: Session, address: Address) -> bool:
    """``address`` is unverified on an account (a password, or another verified address)."""
    if address.verified_on is not None or address.user_id is None:
        return False
    user = session.get(User, address.user_id)
    if user is None:
        return False
    if user.password or user.is_server_owner:
        return True
    others = session.scalar(
        select(func.count(Address.id)).where(
            Address.user_id == user.id,
            Address.id != address.id,
            Address.verified_on.is_not(None),
        )
    )
    return bool(others)


def drop_claim(session: Session, address: Address, now: datetime, actor: str = "") -> bool:
    """Take ``address`` off the account that only claims it (with what that account set
    for it), audited at ``now``; True when it did."""
    if not is_claim(session, address):
        return False
    user_id = address.user_id
    for user in session.scalars(select(User).where(User.preferred_address_id == address.id)):
        user.preferred_address_id = None
    address.user_id = None
    address.display_name = ""
    for key in PREFERENCE_KEYS:
        setattr(address, key, None)
    session.add(
        AuditEntry(
            actor=actor or address.email,
            action="address.claim_dropped",
            at=now,
            detail={"email": address.email, "user_pk": user_id},
        )
    )
    session.flush()
    return True


def vouch(session: Session, address: Address, now: datetime) -> None:
    """Someone showed ``address`` is the person's (a mailed link, a staff member vouching):
    verified from now on, after a claim on it is dropped."""
    if address.verified_on is not None:
        return
    drop_claim(session, address, now)
    address.verified_on = now
    session.flush()
