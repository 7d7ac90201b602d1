"""The language a person reads on a list (the notices, digests and replies they get)."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from mtaplugin.db import flushed_connection
from mtaplugin.enums import MemberRole
from mtaplugin.model import Address, MailingList, Member, User


def language_of(
    session: Session, mlist: MailingList, email: str, fallback: str | None = None
) -> str:
    """The language a person reads: their membership's, address's or user's preference,
    else ``fallback`` (e.g. what their mail asked for), else the list's
    preferred_language."""
    return languages_of(session, mlist, [email], fallback)[email]


#: Built once (an expanding ``IN``): every notice to a person asks, many of them inside
#: the SMTP transaction (a command's reply, a held post's poster notice).
_LANGUAGES = (
    select(
        Address.email,
        Member.preferred_language,
        Address.preferred_language,
        User.preferred_language,
    )
    .select_from(Address)
    .outerjoin(
        Member,
        (Member.address_id == Address.id)
        & (Member.mailing_list_id == bindparam("mailing_list_id"))
        & (Member.role == MemberRole.member),
    )
    .outerjoin(User, User.id == Address.user_id)
    .where(Address.email.in_(bindparam("emails", expanding=True)))
)


def languages_of(
    session: Session, mlist: MailingList, emails: Collection[str], fallback: str | None = None
) -> dict[str, str]:
    """:func:`language_of` for each of ``emails`` (normalized addresses), in one query."""
    rows = (
        flushed_connection(session)
        .execute(_LANGUAGES, {"mailing_list_id": mlist.id, "emails": sorted(set(emails))})
        .all()
    )
    default = fallback or mlist.preferred_language or "en"
    found = {row[0]: row[1] or row[2] or row[3] for row in rows}
    return {email: found.get(email) or default for email in emails}
