"""The nonmember roster as posting fills it: Mailman adds every sender who posts to a list
without holding a role on it, so that a moderator can give that sender an action."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from mtaplugin.db import flushed_connection, upsert_insert
from mtaplugin.enums import MemberRole
from mtaplugin.model import Address, Member
from mtaplugin.vocabulary.addresses import normalize_email


@functools.cache
def _statements(dialect_name: str) -> tuple[Any, Any, Any]:
    """The roster's three statements on ``dialect_name``, built once: on the milter's path
    building a statement costs more than running it."""
    upsert = upsert_insert(dialect_name)
    find = select(Address.id).where(Address.email == bindparam("email"))
    add_address = (
        upsert(Address)
        .values(
            email=bindparam("email"),
            original_email=bindparam("original_email"),
            display_name="",
            registered_on=bindparam("now"),
        )
        .on_conflict_do_nothing(index_elements=[Address.email])
        .returning(Address.id)
    )
    add_member = (
        upsert(Member)
        .values(
            mailing_list_id=bindparam("mailing_list_id"),
            role=MemberRole.nonmember,
            address_id=bindparam("address_id"),
            created_at=bindparam("now"),
        )
        .on_conflict_do_nothing(
            index_elements=[Member.mailing_list_id, Member.role, Member.address_id]
        )
    )
    return find, add_address, add_member


def record_nonmember(session: Session, mailing_list_id: int, email: str, now: datetime) -> bool:
    """Add ``email`` to the list's nonmembers (as of ``now``) unless it is there; True when
    added.  Its address is created unverified (nobody vouched for it).  A concurrent post that added
    the same sender first is no error.

    Plain prepared statements on the session's connection that leave an existing row alone
    (``ON CONFLICT DO NOTHING``, on SQLite and PostgreSQL alike), not the ORM and a
    savepoint: this runs inside the SMTP transaction of every post from a new nonmember
    (spam, mostly)."""
    addr = normalize_email(email)
    conn = flushed_connection(session)
    find, add_address, add_member = _statements(conn.dialect.name)
    address_id = conn.execute(find, {"email": addr}).scalar()
    if address_id is None:
        # (a concurrent post that added it first: no row comes back, and it is read)
        address_id = conn.execute(
            add_address, {"email": addr, "original_email": email, "now": now}
        ).scalar()
        if address_id is None:
            address_id = conn.execute(find, {"email": addr}).scalar_one()
    added = conn.execute(
        add_member, {"mailing_list_id": mailing_list_id, "address_id": address_id, "now": now}
    )
    return bool(added.rowcount)
