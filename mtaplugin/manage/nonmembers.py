"""The nonmember roster as posting fills it: Mailman adds every sender who posts to a list
without holding a role on it, so that a moderator can give that sender an action."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.db import upsert_insert
from mtaplugin.enums import MemberRole
from mtaplugin.model import Address, Member
from mtaplugin.vocabulary.addresses import normalize_email


def record_nonmember(session: Session, mailing_list_id: int, email: str, now: datetime) -> bool:
    """Add ``email`` to the list's nonmembers (as of ``now``) unless it is there; True when
    added.  Its address is created unverified (nobody vouched for it).  A concurrent post that added
    the same sender first is no error.

    Plain inserts that leave an existing row alone (``ON CONFLICT DO NOTHING``, on
    SQLite and PostgreSQL alike), not the ORM and a savepoint: this runs inside the SMTP
    transaction of every post from a new nonmember (spam, mostly)."""
    addr = normalize_email(email)
    upsert = upsert_insert(session.get_bind().dialect.name)
    find = select(Address.id).where(Address.email == addr)
    address_id = session.scalar(find)
    if address_id is None:
        session.execute(
            upsert(Address)
            .values(email=addr, original_email=email, display_name="", registered_on=now)
            .on_conflict_do_nothing(index_elements=[Address.email])
        )
        address_id = session.scalar(find)
    added = session.execute(
        upsert(Member)
        .values(
            mailing_list_id=mailing_list_id,
            role=MemberRole.nonmember,
            address_id=address_id,
            created_at=now,
        )
        .on_conflict_do_nothing(
            index_elements=[Member.mailing_list_id, Member.role, Member.address_id]
        )
    )
    return bool(getattr(added, "rowcount", 0))
