"""The digest store: each list's posts waiting for its next digest (table
``digest_queue``), in the order they were accepted.

A post is added in the transaction that accepts it (:func:`add`, called by
:mod:`mtaplugin.engine.persist` and by the release of a held post), as the archive keeps it:
after the list's headers and subject prefix, before the members' decoration and DMARC
mitigation.  A digest's send removes exactly the entries it built from, in the transaction
that puts the digest in the outbox (:mod:`mtaplugin.digests.send`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar, cast

from sqlalchemy import Table, bindparam, event, func, insert, select
from sqlalchemy.orm import Session, object_session

from mtaplugin.enums import DeliveryMode, MemberRole
from mtaplugin.model import DigestEntry, Member, OneLastDigest

# Built once: on the milter's path, building a statement costs more than running it.
_TABLE = cast(Table, DigestEntry.__table__)
_INSERT = insert(_TABLE)
_SIZE = select(func.coalesce(func.sum(func.length(_TABLE.c.raw)), 0)).where(
    _TABLE.c.mailing_list_id == bindparam("pk")
)


def add(
    session: Session,
    list_pk: int,
    raw: bytes,
    *,
    message_id: str = "",
    sender: str = "",
    subject: str = "",
    now: datetime,
) -> None:
    session.execute(
        _INSERT,
        {
            "mailing_list_id": list_pk,
            "message_id": message_id[:998],
            "sender": sender[:320],
            "subject": subject,
            "raw": raw,
            "added_at": now,
        },
    )


def size(session: Session, list_pk: int) -> int:
    """The bytes kept for the list's next digest (``digest_size_threshold`` is in KiB)."""
    return int(session.scalar(_SIZE, {"pk": list_pk}) or 0)


#: the rows the store keeps for a list's next digest
_Kept = TypeVar("_Kept", DigestEntry, OneLastDigest)


def _kept(session: Session, table: type[_Kept], list_pk: int) -> list[_Kept]:
    """The list's rows of ``table``, in the order they were added."""
    query = select(table).where(table.mailing_list_id == list_pk).order_by(table.id)
    return list(session.scalars(query))


def entries(session: Session, list_pk: int) -> list[DigestEntry]:
    """The posts kept for the list's next digest, in the order they came."""
    return _kept(session, DigestEntry, list_pk)


@dataclass(frozen=True)
class Pending:
    """What waits for a list's next digest."""

    posts: int
    size: int
    #: when the oldest post waiting was added (None: nothing waits)
    oldest: datetime | None


def pending(session: Session, list_pk: int) -> Pending:
    posts, total, oldest = session.execute(
        select(
            func.count(DigestEntry.id),
            func.coalesce(func.sum(func.length(DigestEntry.raw)), 0),
            func.min(DigestEntry.added_at),
        ).where(DigestEntry.mailing_list_id == list_pk)
    ).one()
    return Pending(int(posts or 0), int(total or 0), oldest)


def lists_waiting(session: Session) -> list[int]:
    """The lists that have posts waiting for a digest."""
    return list(session.scalars(select(DigestEntry.mailing_list_id).distinct()))


# --- one last digest ------------------------------------------------------------------------
def _effective(member: Member, mode: DeliveryMode | None) -> DeliveryMode:
    address = member.address
    user = address.user if address is not None else None
    return (
        mode
        or (address.delivery_mode if address is not None else None)
        or (user.delivery_mode if user is not None else None)
        or DeliveryMode.regular
    )


@event.listens_for(Member.delivery_mode, "set", active_history=True)
def _left_digests(member: Member, value: object, old: object, _initiator: object) -> None:
    """A member who leaves digest delivery while posts wait for the digest gets one last
    digest of them (Mailman's ``OneLastDigest``): they reached the member neither as
    regular copies nor yet as a digest.  Whatever surface changes the mode (email command,
    web, REST, CLI), through the ORM."""
    session = object_session(member)
    if session is None or member.role is not MemberRole.member or member.id is None:
        return
    with session.no_autoflush:
        before = _effective(member, old if isinstance(old, DeliveryMode) else None)
        after = _effective(member, value if isinstance(value, DeliveryMode) else None)
        if before is DeliveryMode.regular or after is not DeliveryMode.regular:
            return
        waiting = session.scalar(
            select(_TABLE.c.id).where(_TABLE.c.mailing_list_id == member.mailing_list_id).limit(1)
        )
        if waiting is None or member.address is None:
            return
        session.add(
            OneLastDigest(
                mailing_list_id=member.mailing_list_id,
                email=member.address.email,
                delivery_mode=before,
            )
        )


def one_last(session: Session, list_pk: int) -> list[OneLastDigest]:
    """Who gets the list's next digest once more (and then no more)."""
    return _kept(session, OneLastDigest, list_pk)
