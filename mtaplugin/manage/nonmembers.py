"""The nonmember roster as posting fills it: Mailman adds every sender who posts to a list
without holding a role on it, so that a moderator can give that sender an action."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.model import Address, Member
from mtaplugin.vocabulary.addresses import normalize_email


def record_nonmember(session: Session, mailing_list_id: int, email: str, now: datetime) -> bool:
    """Add ``email`` to the list's nonmembers (as of ``now``) unless it is there; True when
    added.  Its address is created unverified (nobody vouched for it).  A concurrent post that added
    the same sender first is no error."""
    addr = normalize_email(email)
    address = session.scalar(select(Address).where(Address.email == addr))
    if address is not None:
        there = session.scalar(
            select(Member.id).where(
                Member.mailing_list_id == mailing_list_id,
                Member.role == MemberRole.nonmember,
                Member.address_id == address.id,
            )
        )
        if there is not None:
            return False
    try:
        with session.begin_nested():
            if address is None:
                address = Address(
                    email=addr, original_email=email, display_name="", registered_on=now
                )
                session.add(address)
                session.flush()
            session.add(
                Member(
                    mailing_list_id=mailing_list_id,
                    role=MemberRole.nonmember,
                    address_id=address.id,
                    created_at=now,
                )
            )
    except IntegrityError:
        return False
    return True
