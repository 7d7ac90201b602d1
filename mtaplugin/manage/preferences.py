"""A person's preferences, layered as Mailman 3 layers them: the membership's choice, else
the address's, else the user's (the account's global preferences), else the site's default
(:data:`~mtaplugin.model.preferences.SYSTEM_PREFERENCES`).

Delivery resolves the same layers in SQL (:mod:`mtaplugin.lists.roster`); this module
shows them to people (what applies, and where it comes from) and takes the account's
global preferences from a form.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.digests import store as digest_store
from mtaplugin.enums import DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _, available_languages
from mtaplugin.manage.members import check_delivery_mode, parse_delivery_mode
from mtaplugin.model import Address, Member, OneLastDigest, User
from mtaplugin.model.preferences import SYSTEM_PREFERENCES

#: the yes/no preferences an account sets for all its lists
FLAGS = ("receive_own_postings", "receive_list_copy", "hide_address", "acknowledge_posts")


class Layer(StrEnum):
    member = "member"
    address = "address"
    user = "user"
    site = "site"


@dataclass(frozen=True)
class Resolved:
    value: object
    #: the layer whose choice applies
    layer: Layer


def resolve(
    key: str, member: Member | None, address: Address | None, user: User | None
) -> Resolved:
    """The preference ``key`` that applies: membership → address → user → site."""
    for layer, holder in ((Layer.member, member), (Layer.address, address), (Layer.user, user)):
        value = getattr(holder, key, None) if holder is not None else None
        if value is not None:
            return Resolved(value, layer)
    return Resolved(SYSTEM_PREFERENCES[key], Layer.site)


def _flag(field: str, text: str) -> bool | None:
    if text == "":
        return None
    if text in ("yes", "no"):
        return text == "yes"
    raise InvalidInput(field, _("choose yes, no or the site's default"))


def set_global(user: User, form: dict[str, str]) -> None:
    """The account's global preferences from ``form`` (every key optional; "" = the site's
    default).  Raises :class:`InvalidInput` naming the field; nothing changes then."""
    changes: dict[str, object] = {}
    if "delivery_mode" in form:
        text = form["delivery_mode"].strip()
        changes["delivery_mode"] = check_delivery_mode(parse_delivery_mode(text)) if text else None
    if "delivery" in form:
        text = form["delivery"].strip()
        if text not in ("on", "off"):
            raise InvalidInput("delivery", _("choose on or off"))
        changes["delivery_status"] = None if text == "on" else DeliveryStatus.by_user
    if "preferred_language" in form:
        text = form["preferred_language"].strip()
        if text and text not in available_languages():
            raise InvalidInput("preferred_language", _("no catalog for {lang}").format(lang=text))
        changes["preferred_language"] = text or None
    for key in FLAGS:
        if key in form:
            changes[key] = _flag(key, form[key].strip())
    for key, value in changes.items():
        setattr(user, key, value)


def set_global_in(session: Session, user: User, form: dict[str, str], now: datetime) -> None:
    """:func:`set_global`, and for each membership that leaves digest delivery through it
    while posts wait for the list's digest, one last digest of them (Mailman's
    ``OneLastDigest``, as when a membership's own mode changes)."""
    rows = session.execute(
        select(Member, Address)
        .join(Address, Address.id == Member.address_id)
        .where(Address.user_id == user.id, Member.role == MemberRole.member)
    ).all()
    before = {m.id: delivery_mode_of(m, a, user) for m, a in rows}
    set_global(user, form)
    for member, address in rows:
        was = before[member.id]
        if was is DeliveryMode.regular or delivery_mode_of(member, address, user) is not (
            DeliveryMode.regular
        ):
            continue
        if digest_store.pending(session, member.mailing_list_id).posts:
            session.add(
                OneLastDigest(
                    mailing_list_id=member.mailing_list_id,
                    email=address.email,
                    delivery_mode=was,
                    added_at=now,
                )
            )
    session.flush()


def delivery_mode_of(member: Member, address: Address | None, user: User | None) -> DeliveryMode:
    mode = resolve("delivery_mode", member, address, user).value
    return mode if isinstance(mode, DeliveryMode) else DeliveryMode(str(mode))
