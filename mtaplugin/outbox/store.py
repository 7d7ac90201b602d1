"""The outbox in SQL: rows queued in the caller's transaction, and the leases a delivery
pass takes on them.

A pass holds a row while it sends it: ``claimed_by`` names the pass (host, pid and a random
part) and ``claimed_until`` says when the lease runs out (now + :func:`lease`).  Every commit
of a pass names it, so a pass that lost its lease (it stalled, and another worker took the
row) finds out at its next commit and changes nothing.

"Now" for leases is the database's clock on PostgreSQL (mail hosts' clocks may differ)
when the delivery runs on the system clock; otherwise (SQLite: one host; or a test's
:class:`~mtaplugin.clock.ManualClock`) it is the delivery's clock.  Due times, back-off and
the retry period are always measured on the delivery's clock.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, exists, func, insert, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import Clock, system_clock
from mtaplugin.config import OutboxSettings
from mtaplugin.db import flushed_connection, session_scope
from mtaplugin.enums import OutboxStatus
from mtaplugin.mailauth.service import SealInfo
from mtaplugin.model import MailingList, OutboxMessage
from mtaplugin.model.base import Base, utcnow
from mtaplugin.vocabulary.own_copy import OwnCopyInfo
from mtaplugin.vocabulary.retry import Backoff

OUTBOX = cast(Table, OutboxMessage.__table__)
C = OUTBOX.c

#: a pass holds the rows it picked for this many ``outbox.timeout`` (renewed at every
#: commit), so that a chunk's SMTP conversation, even a slow one, ends well inside it
LEASE_TIMEOUTS = 10


def lease(out: OutboxSettings) -> timedelta:
    """How long a pass holds a row before another worker may pick it."""
    return timedelta(seconds=LEASE_TIMEOUTS * out.timeout)


def policy(out: OutboxSettings) -> Backoff:
    """The retry policy of the outbox (:mod:`mtaplugin.vocabulary.retry`), from ``[outbox]``."""
    return Backoff(
        first=timedelta(seconds=out.backoff_first),
        most=timedelta(seconds=out.backoff_max),
        give_up_after=timedelta(seconds=out.retry_period),
    )


def backoff(attempts: int, out: OutboxSettings | None = None) -> timedelta:
    """The wait after ``attempts`` tries: ``backoff_first``, doubling, at most ``backoff_max``."""
    return policy(out or OutboxSettings()).wait(attempts)


#: Built once: a notice is queued inside the SMTP transaction of every held post, command
#: and forwarded bounce, and the ORM's unit of work (an object, a flush) costs several
#: times this one prepared ``INSERT``.
_INSERT = insert(OUTBOX).returning(C.id)


def enqueue(
    session: Session,
    mail_from: str,
    recipients: list[str],
    raw: bytes,
    kind: str = "notice",
    mailing_list_id: int | None = None,
    personalize: dict[str, object] | None = None,
    seal: SealInfo | None = None,
    now: datetime | None = None,
    post_number: int | None = None,
) -> int:
    """Queue ``raw`` for ``recipients``, in the caller's transaction (so that a held post's
    notice and the hold commit together), due at once (at ``now``, when given); the new
    row's id.

    With ``personalize`` (a list post whose members get their own copies: ``raw`` is then
    the archive copy and ``personalize`` an
    :class:`~mtaplugin.copies.transforms.personalize.OwnCopyInfo` record), each recipient gets
    :func:`mtaplugin.copies.transforms.own_copy`, made when it leaves.  With ``seal`` (a list
    copy), the worker ARC-seals and DKIM-signs each copy as it leaves, after that.
    ``post_number`` (a list post's copy: its number) lets the worker VERP the copies the
    site asks for (:class:`mtaplugin.copies.return_path.VerpPolicy`)."""
    at = now if now is not None else utcnow()
    row = {
        "mail_from": mail_from,
        "recipients": list(recipients),
        "raw": raw,
        "kind": kind,
        "mailing_list_id": mailing_list_id,
        "personalize": personalize,
        "seal": seal.as_record() if seal is not None else None,
        "post_number": post_number,
        "created_at": at,
        "next_attempt_at": at,
    }
    return int(flushed_connection(session).execute(_INSERT, row).scalar_one())


def list_notice(
    session: Session,
    mlist: MailingList,
    recipients: Sequence[str],
    raw: bytes,
    now: datetime,
    mail_from: str = "",
) -> int | None:
    """Queue a notice in ``mlist``'s name, due at ``now`` (the caller's clock; none when
    there are no ``recipients``), from its ``-bounces`` address (or ``mail_from``: a probe's
    VERP token address), so that a bounce of it comes back to bounce processing, not to a
    person.  The queued row's id, or None."""
    if not recipients:
        return None
    return enqueue(
        session,
        mail_from or mlist.bounces_address,
        list(recipients),
        raw,
        kind="notice",
        mailing_list_id=mlist.id,
        now=now,
    )


def enqueue_many(
    session: Session,
    mail_from: str,
    messages: Sequence[tuple[list[str], bytes]],
    kind: str = "notice",
    mailing_list_id: int | None = None,
    now: datetime | None = None,
) -> None:
    """Queue each ``(recipients, raw)`` of ``messages`` as :func:`enqueue` does, in one
    statement (a mass subscription's welcomes), in the caller's transaction."""
    at = {} if now is None else {"created_at": now, "next_attempt_at": now}
    if messages:
        session.execute(
            insert(OutboxMessage),
            [
                {
                    "mail_from": mail_from,
                    "recipients": list(recipients),
                    "raw": raw,
                    "kind": kind,
                    "mailing_list_id": mailing_list_id,
                    **at,
                }
                for recipients, raw in messages
            ],
        )


def new_token() -> str:
    """A name for one pass: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"[-128:]


@dataclass
class Row:
    """What an attempt reads of the row it holds."""

    id: int
    mail_from: str
    recipients: list[str]
    raw: bytes
    attempts: int
    created_at: datetime
    mailing_list_id: int | None = None
    #: what made it: "post" (a list copy for members), "notice", ...
    kind: str = "notice"
    personalize: OwnCopyInfo | None = None
    seal: SealInfo | None = None
    #: a list post's copy: the post's number (None: a notice or anything else)
    post_number: int | None = None
    #: how far an earlier attempt got (a crashed or stopped one): ``recipients[:progress]``
    #: are done, but ``retry``
    progress: int = 0
    #: recipients before ``progress`` still to do
    retry: list[str] = field(default_factory=list)


@dataclass
class Store:
    """The outbox rows a delivery works on, with its settings and its clock."""

    sessions: sessionmaker[Session]
    out: OutboxSettings
    clock: Clock = system_clock

    # --- time ---------------------------------------------------------------------------
    def _lease_now(self, session: Session) -> ColumnElement[datetime] | datetime:
        if self.clock is system_clock and session.get_bind().dialect.name == "postgresql":
            return func.now()
        return self.clock()

    def _due(self, now: ColumnElement[datetime] | datetime) -> tuple[ColumnElement[bool], ...]:
        return (
            C.status == OutboxStatus.queued,
            C.next_attempt_at <= self.clock(),
            or_(C.claimed_until.is_(None), C.claimed_until < now),
        )

    def expired(self, created_at: datetime) -> bool:
        """The row was queued ``outbox.retry_period`` ago or longer."""
        return policy(self.out).expired(created_at, self.clock())

    def next_attempt(self, attempts: int) -> datetime:
        """When a row deferred after ``attempts`` tries is due again."""
        return self.clock() + policy(self.out).wait(attempts)

    # --- leases -------------------------------------------------------------------------
    def anything_due(self) -> bool:
        """Is a row due that nobody holds?  (The idle worker's question: a read.)"""
        with session_scope(self.sessions) as session:
            due = self._due(self._lease_now(session))
            return bool(session.scalar(select(exists().where(*due))))

    def claim(self, token: str, limit: int) -> list[int]:
        """Take a lease on up to ``limit`` due rows nobody holds; return their ids, the
        longest due first."""
        with session_scope(self.sessions) as session:
            now = self._lease_now(session)
            due = self._due(now)
            # A materialized CTE, which PostgreSQL runs once.  (A plain ``IN (subquery)``
            # may be rescanned for every outer row, each rescan passing over the rows the
            # statement has already claimed and picking others: more than ``limit`` rows.)
            picked = (
                select(C.id)
                .where(*due)
                .order_by(C.next_attempt_at, C.id)
                .limit(limit)
                .with_for_update(skip_locked=True)  # PostgreSQL; SQLite has one writer
                .cte("picked")
                .prefix_with("MATERIALIZED")
            )
            rows = session.execute(
                update(OUTBOX)
                .where(C.id.in_(select(picked.c.id)), *due)
                .values(claimed_by=token, claimed_until=now + lease(self.out))
                .returning(C.id, C.next_attempt_at)
            ).all()
        return [r.id for r in sorted(rows, key=lambda r: (r.next_attempt_at, r.id))]

    def take(self, token: str, row_id: int) -> Row | None:
        """Start an attempt on a row this pass holds: count it, renew the lease, read it.
        None: another worker holds it now, or it is no longer queued."""
        with session_scope(self.sessions) as session:
            found = session.execute(
                update(OUTBOX)
                .where(C.id == row_id, C.claimed_by == token, C.status == OutboxStatus.queued)
                .values(
                    attempts=C.attempts + 1,
                    claimed_until=self._lease_now(session) + lease(self.out),
                )
                .returning(
                    C.mail_from,
                    C.recipients,
                    C.raw,
                    C.attempts,
                    C.created_at,
                    C.mailing_list_id,
                    C.kind,
                    C.personalize,
                    C.seal,
                    C.post_number,
                    C.progress,
                    C.retry,
                )
            ).first()
        if found is None:
            return None
        return Row(
            id=row_id,
            mail_from=found.mail_from,
            recipients=list(found.recipients),
            raw=bytes(found.raw),
            attempts=found.attempts,
            created_at=found.created_at,
            mailing_list_id=found.mailing_list_id,
            kind=found.kind,
            personalize=OwnCopyInfo.from_record(found.personalize) if found.personalize else None,
            seal=SealInfo.from_record(found.seal),
            post_number=found.post_number,
            progress=found.progress or 0,
            retry=list(found.retry or []),
        )

    def save(
        self,
        token: str,
        row_id: int,
        *,
        progress: int,
        retry: list[str],
        release: bool,
        recipients: list[str] | None = None,
        status: OutboxStatus | None = None,
        next_attempt_at: datetime | None = None,
        last_error: str = "",
        records: Sequence[Base] = (),
    ) -> bool:
        """Commit how far the attempt got (``progress`` into the row's recipients, and
        ``retry``: the recipients before it still to do) and the outcome, if given, if
        this pass still holds the row; renew the lease, or give it back with ``release``.

        The row's recipients are not written (they may be 100 000) unless ``recipients``
        is given: the attempt's outcome, the recipients still to do, written with offset
        0.  ``records`` (bounce events of refused recipients) are added in the same
        transaction.  False: another worker holds the row now, and nothing was written."""
        values: dict[str, Any]
        if recipients is not None:
            values = {"recipients": recipients, "progress": 0, "retry": []}
        else:
            values = {"progress": progress, "retry": retry}
        if status is not None:
            values["status"] = status
        if next_attempt_at is not None:
            values["next_attempt_at"] = next_attempt_at
        if last_error:
            values["last_error"] = last_error
        with session_scope(self.sessions) as session:
            if release:
                values.update(claimed_by=None, claimed_until=None)
            else:
                values["claimed_until"] = self._lease_now(session) + lease(self.out)
            result = session.execute(
                update(OUTBOX).where(C.id == row_id, C.claimed_by == token).values(**values)
            )
            ours = int(getattr(result, "rowcount", 0) or 0) == 1
            if ours:
                session.add_all(records)
            return ours

    def release(self, token: str, ids: list[int]) -> None:
        """Give back rows this pass holds but did not reach (due at once for the next)."""
        with session_scope(self.sessions) as session:
            session.execute(
                update(OUTBOX)
                .where(C.id.in_(ids), C.claimed_by == token)
                .values(claimed_by=None, claimed_until=None)
            )

    def defer(self, token: str, ids: list[int], error: str) -> int:
        """Count a failed attempt on rows this pass holds but could not send, and give
        them back (due after their back-off, or failed past the retry period); return how
        many."""
        if not ids:
            return 0
        with session_scope(self.sessions) as session:
            rows = session.execute(
                update(OUTBOX)
                .where(C.id.in_(ids), C.claimed_by == token, C.status == OutboxStatus.queued)
                .values(
                    attempts=C.attempts + 1, claimed_by=None, claimed_until=None, last_error=error
                )
                .returning(C.id, C.attempts, C.created_at)
            ).all()
            for r in rows:
                if self.expired(r.created_at):
                    values: dict[str, Any] = {"status": OutboxStatus.failed}
                else:
                    values = {"next_attempt_at": self.next_attempt(r.attempts)}
                session.execute(update(OUTBOX).where(C.id == r.id).values(**values))
        return len(rows)
