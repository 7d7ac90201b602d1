"""The language a person reads on a list (the notices, digests and replies they get)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.model import Address, MailingList, Member, User


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
            lang = session.scalar(select(User.preferred_language).where(User.id == row[2]))
            if lang:
                return lang
    return fallback or mlist.preferred_language or "en"
