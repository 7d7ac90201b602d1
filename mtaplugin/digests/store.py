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
from typing import cast

from sqlalchemy import Table, bindparam, func, insert, select
from sqlalchemy.orm import Session

from mtaplugin.model import DigestEntry

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


def entries(session: Session, list_pk: int) -> list[DigestEntry]:
    """The posts kept for the list's next digest, in the order they came."""
    return list(
        session.scalars(
            select(DigestEntry)
            .where(DigestEntry.mailing_list_id == list_pk)
            .order_by(DigestEntry.id)
        )
    )


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
