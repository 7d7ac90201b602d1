"""Mailman 3's users and the addresses of no user, made here (read by
:mod:`mtaplugin.importers.mm3rest`): display name, server-owner flag, password hash,
preferences, addresses with their verification state, the preferred address.  Each
compares before it writes, so a second run changes nothing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import passwords
from mtaplugin.i18n import _
from mtaplugin.importers.django_web import is_django_hash
from mtaplugin.importers.mm3rest import UserData, user_id_of
from mtaplugin.importers.mm3values import preferences, same_time, when
from mtaplugin.model import Address, User
from mtaplugin.posting.addresses import normalize_email


def apply_user(session: Session, data: UserData, notes: list[str]) -> bool:
    """Make one Mailman user here; whether anything changed."""
    user_id = user_id_of(data.user.get("user_id")) or ""
    emails = [normalize_email(str(a["email"])) for a, _p in data.addresses]
    user = session.scalar(select(User).where(User.user_id == user_id))
    if user is None and emails:
        user = session.scalar(
            select(User).join(Address, Address.user_id == User.id).where(Address.email.in_(emails))
        )
    changed = False
    if user is None:
        user = User(user_id=user_id)
        session.add(user)
        changed = True
    password = data.user.get("password")
    # A password set here, or rehashed at a log-in here (argon2), stays: the person has
    # used mtaplugin since; a carried hash follows Mailman's on the next run.
    # A Django hash carried from the web database (django_web) is the person's web
    # password, which Mailman's core hash is not: it stays too.
    kept = bool(user.password) and (
        not passwords.needs_update(user.password or "") or is_django_hash(user.password)
    )
    if isinstance(password, str) and password and user.password != password and not kept:
        if passwords.PASSWORDS.identify(password) is None:
            notes.append(
                _("user {email}: a password hash this side cannot check; set a new one").format(
                    email=emails[0] if emails else user_id
                )
            )
        else:
            user.password = password
            changed = True
    wanted: dict[str, Any] = {"display_name": str(data.user.get("display_name") or "")}
    # Raised, never lowered: a Django superuser is a server owner here too (django_web).
    if data.user.get("is_server_owner"):
        wanted["is_server_owner"] = True
    for key, value in wanted.items():
        if getattr(user, key) != value:
            setattr(user, key, value)
            changed = True
    created = when(data.user.get("created_on"))
    if created is not None and not same_time(user.created_on, created):
        user.created_on = created
        changed = True
    changed |= preferences(user, data.preferences)
    session.flush()
    for resource, prefs in data.addresses:
        changed |= _address(session, user, resource, prefs, notes)
    if data.preferred_address:
        address = session.scalar(
            select(Address).where(Address.email == normalize_email(data.preferred_address))
        )
        if (
            address is not None
            and address.user_id == user.id
            and user.preferred_address_id != address.id
        ):
            user.preferred_address_id = address.id
            changed = True
    session.flush()
    return changed


def apply_address(
    session: Session, resource: dict[str, Any], prefs: dict[str, Any], notes: list[str]
) -> bool:
    """An address of no user in Mailman (a nonmember who posted, say): its verification
    state and preferences, so that a list import does not take it for verified."""
    return _address(session, None, resource, prefs, notes)


def _address(
    session: Session,
    user: User | None,
    resource: dict[str, Any],
    prefs: dict[str, Any],
    notes: list[str],
) -> bool:
    email = normalize_email(str(resource["email"]))
    address = session.scalar(select(Address).where(Address.email == email))
    changed = False
    if address is None:
        address = Address(email=email, original_email=str(resource.get("original_email") or email))
        session.add(address)
        changed = True
    if user is not None:
        if address.user_id not in (None, user.id):
            notes.append(
                _("{email} belongs to another user here; left with that user").format(email=email)
            )
            return changed
        if address.user_id != user.id:
            address.user_id = user.id
            changed = True
    display_name = str(resource.get("display_name") or "")
    if address.display_name != display_name:
        address.display_name = display_name
        changed = True
    verified = when(resource.get("verified_on"))
    if not same_time(address.verified_on, verified):
        address.verified_on = verified
        changed = True
    registered = when(resource.get("registered_on"))
    if registered is not None and not same_time(address.registered_on, registered):
        address.registered_on = registered
        changed = True
    changed |= preferences(address, prefs)
    return changed
