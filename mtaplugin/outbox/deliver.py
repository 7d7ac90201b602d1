"""The outbox: messages mtaplugin itself must send, kept in SQL until the MTA took them.

``enqueue`` adds a row in the caller's transaction (so a held post's notice and the hold
commit together).  The worker calls :func:`deliver_pass` (``deliver_due`` is the same, and
returns how many rows were sent), which makes one pass over what is due:

1. **Claim.**  One statement picks up to ``outbound.batch_size`` due rows that nobody
   holds and writes a lease on them: ``claimed_by`` (this pass: host, pid and a random
   part) and ``claimed_until`` (now + :func:`lease`, i.e. ``LEASE_TIMEOUTS`` ×
   ``outbound.timeout``: 5 minutes by default).  On PostgreSQL the rows are picked
   ``FOR UPDATE SKIP LOCKED`` and the lease is measured on the database's clock, so
   workers on several mail hosts never pick the same row and need not agree on the time;
   SQLite has one writer at a time, and the statement itself re-checks the lease.
2. **Send.**  One SMTP connection to the re-injection listener carries the whole pass,
   with RSET between rows; a connection that breaks is opened again (a chunk cut off by
   a broken connection is sent once more on the new one).  A row's recipients go out in
   chunks of ``outbound.max_recipients``.  After each chunk the MTA took (its 250 to the
   end of data), the recipients still to do are committed, and the lease renewed, before
   the next chunk starts.  That commit names this pass: if it finds that another worker
   holds the row now (the lease ran out), this pass stops sending that row at once.
3. **Settle.**  When every recipient is done the row is ``sent``; recipients deferred
   (4xx) stay in the row, which is tried again after ``outbound.backoff_first`` seconds,
   doubling up to ``outbound.backoff_max``; a row still deferred ``outbound.retry_period``
   after it was queued, or whose every recipient was refused for good (5xx), is
   ``failed``.  An unreachable MTA defers every row of the pass.  Each row's lease is
   given back with its outcome, and a pass stopped by SIGTERM gives back the rows it did
   not reach, so that the next worker need not wait for their leases to run out.

What a crash (``kill -9``, power loss, the database gone) can do
----------------------------------------------------------------
*Nothing is lost.*  A recipient leaves a row only in a commit made after the MTA answered
250 (or 5xx) for it; until then it stays, and once the dead worker's lease has run out
another pass sends it.

*At most one chunk per crash is sent twice*: the chunk whose 250 was in flight -- the MTA
has queued it, but the commit that records it was not made.  SMTP gives the client no way
to close that window (the server's 250 is its commit, and no protocol step follows it that
could make the two atomic; RFC 1047), so between losing the chunk and sending it again,
mtaplugin sends it again: at most ``outbound.max_recipients`` recipients get a second
copy, with the same Message-ID (which their MUA or a Message-ID filter can drop).  The same
holds for a connection broken after the end of data, and for a worker stalled for longer
than its lease (a frozen VM): another worker may send the chunk it had in flight, and the
stalled one notices at its next commit and stops.  Chunks committed before the crash are
never sent again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import smtplib
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, exists, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.config import OutboundSettings, Settings
from mtaplugin.copies.transforms import TransformContext, own_copy
from mtaplugin.copies.transforms.personalize import OwnCopyInfo
from mtaplugin.db import session_scope
from mtaplugin.errors import TryLater
from mtaplugin.mailauth.service import Deliverability, SealInfo
from mtaplugin.model import MailingList, OutboxMessage
from mtaplugin.model.base import utcnow
from mtaplugin.model.enums import OutboxStatus

log = logging.getLogger(__name__)

_SEALERS: dict[int, tuple[Settings, Deliverability]] = {}


def _sealer(settings: Settings) -> Deliverability:
    """The worker's sealer for these settings (one per process: it caches keys)."""
    found = _SEALERS.get(id(settings))
    if found is None or found[0] is not settings:
        found = _SEALERS[id(settings)] = (settings, Deliverability.from_settings(settings))
    return found[1]


#: the mapped class's table (declared, so a Table; SQLAlchemy types ``__table__`` as any FROM)
OUTBOX = cast(Table, OutboxMessage.__table__)
C = OUTBOX.c

#: a pass holds the rows it picked for this many ``outbound.timeout`` (renewed at every
#: commit), so that a chunk's SMTP conversation, even a slow one, ends well inside it
LEASE_TIMEOUTS = 10
#: at most this many recipients are named in ``last_error``
ERROR_NAMES = 10


def lease(out: OutboundSettings) -> timedelta:
    """How long a pass holds a row before another worker may pick it."""
    return timedelta(seconds=LEASE_TIMEOUTS * out.timeout)


def backoff(attempts: int, out: OutboundSettings | None = None) -> timedelta:
    """The wait after ``attempts`` tries: ``backoff_first``, doubling, at most ``backoff_max``."""
    out = out or OutboundSettings()
    seconds = out.backoff_first * 2 ** min(max(0, attempts - 1), 64)
    return timedelta(seconds=min(seconds, out.backoff_max))


def enqueue(
    session: Session,
    mail_from: str,
    recipients: list[str],
    raw: bytes,
    kind: str = "notice",
    mailing_list_id: int | None = None,
    personalize: dict[str, object] | None = None,
    seal: SealInfo | None = None,
) -> OutboxMessage:
    """Queue ``raw`` for ``recipients``.  With ``personalize`` (a list post whose members
    get their own copies: ``raw`` is then the archive copy and ``personalize`` an
    :class:`~mtaplugin.copies.transforms.personalize.OwnCopyInfo` record), each recipient gets
    :func:`mtaplugin.copies.transforms.own_copy`, made when it leaves.  With ``seal`` (a list
    copy), the worker ARC-seals and DKIM-signs each copy as it leaves, after that."""
    row = OutboxMessage(
        mail_from=mail_from,
        recipients=list(recipients),
        raw=raw,
        kind=kind,
        mailing_list_id=mailing_list_id,
        personalize=personalize,
        seal=seal.as_record() if seal is not None else None,
    )
    session.add(row)
    session.flush()
    return row


@dataclass
class PassResult:
    """What one pass did."""

    claimed: int = 0
    sent: int = 0
    deferred: int = 0
    failed: int = 0


def deliver_due(
    sessions: sessionmaker[Session], settings: Settings, limit: int | None = None
) -> int:
    """One pass over the due rows (at most ``limit``, default ``outbound.batch_size``);
    return how many were fully sent."""
    return deliver_pass(sessions, settings, limit).sent


def deliver_pass(
    sessions: sessionmaker[Session],
    settings: Settings,
    limit: int | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> PassResult:
    """Claim up to ``limit`` due rows and send them over one SMTP connection.

    ``should_stop`` is asked between chunks: when it says yes, the pass commits where it
    is and gives back every row it holds.  Raises :class:`TryLater` if the database
    cannot be reached (the rows held come back when their lease runs out).
    """
    out = settings.outbound
    stop = should_stop or (lambda: False)
    result = PassResult()
    if not _anything_due(sessions):
        return result  # the idle worker's once-a-second question is a read
    token = _token()
    ids = claim(sessions, out, token, out.batch_size if limit is None else limit)
    result.claimed = len(ids)
    if not ids:
        return result
    mta = _Mta(out)
    reached = 0
    try:
        for index, row_id in enumerate(ids):
            if stop():
                break
            if index:
                mta.reset()
            try:
                outcome = _deliver_row(
                    sessions,
                    out,
                    token,
                    row_id,
                    mta,
                    stop,
                    settings.site.secret_key,
                    _sealer(settings),
                )
            except _Unreachable as exc:
                reached = len(ids)
                result.deferred += 1 + _defer(sessions, out, token, ids[index + 1 :], str(exc))
                break
            except TryLater:
                raise
            except Exception as exc:  # a bug or an odd row: it must not stop the others
                log.exception("outbox %s: delivery failed", row_id)
                mta.drop()
                _defer(sessions, out, token, [row_id], f"{type(exc).__name__}: {exc}")
                outcome = "deferred"
            reached = index + 1
            if outcome == "sent":
                result.sent += 1
            elif outcome == "failed":
                result.failed += 1
            elif outcome == "deferred":
                result.deferred += 1
    finally:
        mta.close()
        if ids[reached:]:
            with contextlib.suppress(TryLater):
                _release(sessions, token, ids[reached:])
    log.info(
        "outbox: %d sent, %d deferred, %d failed of %d claimed",
        result.sent,
        result.deferred,
        result.failed,
        result.claimed,
    )
    return result


# --- claims and commits ---------------------------------------------------------------------
def _now(session: Session) -> Any:
    """'Now' for leases: the database's clock on PostgreSQL (mail hosts' clocks may
    differ), this host's on SQLite (one host)."""
    if session.get_bind().dialect.name == "postgresql":
        return func.now()
    return utcnow()


def _due(now: Any) -> tuple[Any, ...]:
    return (
        C.status == OutboxStatus.queued,
        C.next_attempt_at <= utcnow(),
        or_(C.claimed_until.is_(None), C.claimed_until < now),
    )


def _token() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"[-128:]


def _anything_due(sessions: sessionmaker[Session]) -> bool:
    with session_scope(sessions) as session:
        return bool(session.scalar(select(exists().where(*_due(_now(session))))))


def claim(
    sessions: sessionmaker[Session], out: OutboundSettings, token: str, limit: int
) -> list[int]:
    """Take a lease on up to ``limit`` due rows nobody holds; return their ids, the
    longest due first."""
    with session_scope(sessions) as session:
        now = _now(session)
        due = _due(now)
        # A materialized CTE, which PostgreSQL runs once.  (A plain ``IN (subquery)`` may be
        # rescanned for every outer row, each rescan passing over the rows the statement has
        # already claimed and picking others: more than ``limit`` rows.)
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
            .values(claimed_by=token, claimed_until=now + lease(out))
            .returning(C.id, C.next_attempt_at)
        ).all()
    return [r.id for r in sorted(rows, key=lambda r: (r.next_attempt_at, r.id))]


@dataclass
class _Row:
    id: int
    mail_from: str
    recipients: list[str]
    raw: bytes
    attempts: int
    created_at: datetime
    mailing_list_id: int | None = None
    personalize: OwnCopyInfo | None = None
    seal: SealInfo | None = None


def _take(
    sessions: sessionmaker[Session], out: OutboundSettings, token: str, row_id: int
) -> _Row | None:
    """Start an attempt on a row this pass holds: count it, renew the lease, read it."""
    with session_scope(sessions) as session:
        found = session.execute(
            update(OUTBOX)
            .where(C.id == row_id, C.claimed_by == token, C.status == OutboxStatus.queued)
            .values(attempts=C.attempts + 1, claimed_until=_now(session) + lease(out))
            .returning(
                C.mail_from,
                C.recipients,
                C.raw,
                C.attempts,
                C.created_at,
                C.mailing_list_id,
                C.personalize,
                C.seal,
            )
        ).first()
    if found is None:
        return None
    return _Row(
        id=row_id,
        mail_from=found.mail_from,
        recipients=list(found.recipients),
        raw=bytes(found.raw),
        attempts=found.attempts,
        created_at=found.created_at,
        mailing_list_id=found.mailing_list_id,
        personalize=OwnCopyInfo.from_record(found.personalize) if found.personalize else None,
        seal=SealInfo.from_record(found.seal),
    )


def _save(
    sessions: sessionmaker[Session],
    out: OutboundSettings,
    token: str,
    row_id: int,
    release: bool,
    **values: Any,
) -> bool:
    """Commit a row's state if this pass still holds it; renew the lease, or give it back
    with ``release``.  False: another worker holds the row now."""
    with session_scope(sessions) as session:
        if release:
            values.update(claimed_by=None, claimed_until=None)
        else:
            values["claimed_until"] = _now(session) + lease(out)
        result = session.execute(
            update(OUTBOX).where(C.id == row_id, C.claimed_by == token).values(**values)
        )
        return int(getattr(result, "rowcount", 0) or 0) == 1


def _release(sessions: sessionmaker[Session], token: str, ids: list[int]) -> None:
    with session_scope(sessions) as session:
        session.execute(
            update(OUTBOX)
            .where(C.id.in_(ids), C.claimed_by == token)
            .values(claimed_by=None, claimed_until=None)
        )


def _defer(
    sessions: sessionmaker[Session], out: OutboundSettings, token: str, ids: list[int], error: str
) -> int:
    """Count a failed attempt on rows this pass holds but could not send; return how many."""
    if not ids:
        return 0
    with session_scope(sessions) as session:
        rows = session.execute(
            update(OUTBOX)
            .where(C.id.in_(ids), C.claimed_by == token, C.status == OutboxStatus.queued)
            .values(attempts=C.attempts + 1, claimed_by=None, claimed_until=None, last_error=error)
            .returning(C.id, C.attempts, C.created_at)
        ).all()
        for r in rows:
            if _expired(out, r.created_at):
                values: dict[str, Any] = {"status": OutboxStatus.failed}
            else:
                values = {"next_attempt_at": utcnow() + backoff(r.attempts, out)}
            session.execute(update(OUTBOX).where(C.id == r.id).values(**values))
    return len(rows)


def _expired(out: OutboundSettings, created_at: datetime) -> bool:
    return utcnow() - created_at > timedelta(seconds=out.retry_period)


# --- SMTP -----------------------------------------------------------------------------------
class _Unreachable(Exception):
    """The MTA cannot be reached at all: the rest of the pass waits."""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _Mta:
    """The pass's one connection to the re-injection listener, opened when first needed."""

    def __init__(self, out: OutboundSettings) -> None:
        self.out = out
        self.smtp: smtplib.SMTP | None = None

    def connection(self) -> smtplib.SMTP:
        if self.smtp is None or self.smtp.sock is None:
            smtp = smtplib.SMTP(timeout=self.out.timeout)
            try:
                smtp.connect(self.out.host, self.out.port)
                smtp.ehlo_or_helo_if_needed()
            except (OSError, smtplib.SMTPException) as exc:
                smtp.close()
                raise _Unreachable(_describe(exc)) from exc
            self.smtp = smtp
        return self.smtp

    def reset(self) -> None:
        """Between rows: RSET; a connection that does not answer 250 is dropped (and the
        next chunk opens a new one)."""
        if self.smtp is None:
            return
        try:
            code = self.smtp.rset()[0]
        except (OSError, smtplib.SMTPException):
            code = 0
        if code != 250:
            self.drop()

    def drop(self) -> None:
        if self.smtp is not None:
            self.smtp.close()
            self.smtp = None

    def close(self) -> None:
        if self.smtp is not None:
            with contextlib.suppress(OSError, smtplib.SMTPException):
                self.smtp.quit()
            self.drop()


@dataclass
class _Chunk:
    accepted: list[str]
    #: recipient → reply, for 4xx (tried again) and 5xx (not tried again)
    deferred: dict[str, str]
    refused: dict[str, str]
    #: recipients never named, because the MTA closed the connection (421) before them
    untried: list[str]


def _reply(code: int, text: bytes | str) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return f"{code} {' '.join(text.split())}"[:200]


def _send_chunk(smtp: smtplib.SMTP, mail_from: str, batch: list[str], raw: bytes) -> _Chunk:
    """One SMTP transaction; connection failures propagate (OSError, SMTPException)."""
    chunk = _Chunk([], {}, {}, [])
    ascii_only = mail_from.isascii() and all(r.isascii() for r in batch)
    try:
        refused = smtp.sendmail(mail_from, batch, raw, [] if ascii_only else ["SMTPUTF8"])
    except smtplib.SMTPRecipientsRefused as exc:
        refused = exc.recipients  # nothing was sent
        chunk.untried = [r for r in batch if r not in refused]
    except smtplib.SMTPResponseException as exc:  # MAIL FROM or the data refused: all of it
        reply = _reply(exc.smtp_code, exc.smtp_error)
        bucket = chunk.refused if 500 <= exc.smtp_code < 600 else chunk.deferred
        bucket.update(dict.fromkeys(batch, reply))
        return chunk
    except smtplib.SMTPNotSupportedError:
        chunk.refused.update(dict.fromkeys(batch, "the MTA does not offer SMTPUTF8"))
        return chunk
    else:
        chunk.accepted = [r for r in batch if r not in refused]
    for rcpt, (code, text) in refused.items():
        bucket = chunk.refused if 500 <= code < 600 else chunk.deferred
        bucket[rcpt] = _reply(code, text)
    return chunk


def _summary(refused: dict[str, str], deferred: dict[str, str], error: str) -> str:
    parts = []
    for label, found in (("refused", refused), ("deferred", deferred)):
        if found:
            named = [f"{r} ({reply})" for r, reply in list(found.items())[:ERROR_NAMES]]
            if len(found) > ERROR_NAMES:
                named.append(f"and {len(found) - ERROR_NAMES} more")
            parts.append(f"{label}: " + ", ".join(named))
    if error:
        parts.append(error)
    return "; ".join(parts)


def _own_copy_context(
    sessions: sessionmaker[Session], row: _Row, secret_key: str
) -> TransformContext | None:
    """What each member's copy of ``row`` is made with (None: its list is gone; then the
    archive copy goes as it is).  DKIM/ARC: the context's ``sign`` signs each copy."""
    from mtaplugin.copies import delivery

    info = row.personalize
    if info is None or row.mailing_list_id is None:
        return None
    with sessions() as session:
        mlist = session.get(MailingList, row.mailing_list_id)
        if mlist is None:
            return None
        ctx = delivery.session_context(
            session, mlist, info.post_number, should_mitigate=info.should_mitigate
        )
        session.expunge(mlist)
    return replace(ctx, unsubscribe_secret=secret_key)


def _deliver_row(
    sessions: sessionmaker[Session],
    out: OutboundSettings,
    token: str,
    row_id: int,
    mta: _Mta,
    stop: Callable[[], bool],
    secret_key: str = "",
    sealer: Deliverability | None = None,
) -> str:
    """One attempt on one row; return "sent", "failed", "deferred", or "skipped" (another
    worker has it, or it is no longer queued), "released" (stopped half-way).  Raises
    :class:`_Unreachable` after deferring the row when the MTA cannot be reached."""
    row = _take(sessions, out, token, row_id)
    if row is None:
        return "skipped"
    remaining = list(row.recipients)  # what the row says is left, in its order
    todo = list(row.recipients)  # not yet tried in this attempt
    deferred: dict[str, str] = {}
    refused: dict[str, str] = {}
    accepted_any = False
    error = ""
    unreachable = False
    reconnected = False
    renewed = time.monotonic()
    # Members' own copies: one transaction per member, each with its own copy.
    personal = _own_copy_context(sessions, row, secret_key) if row.personalize else None
    sealed: dict[str, bytes] = {}

    def copy_for(email: str) -> bytes:
        """The copy that goes to ``email`` (the shared one unless members get their own),
        sealed when it is a list copy and the worker has a sealer."""
        if personal is None and "" in sealed:
            return sealed[""]
        raw = own_copy(replace(personal, member=email), row.raw) if personal else row.raw
        if row.seal is not None and sealer is not None:
            with sessions() as session:
                raw = sealer.seal(session, row.seal, raw)
        if personal is None:
            sealed[""] = raw
        return raw

    while todo:
        if stop():
            saved = _save(sessions, out, token, row.id, True, recipients=remaining)
            return "released" if saved else "skipped"
        batch = todo[: 1 if personal else out.max_recipients]
        raw = copy_for(batch[0])
        try:
            chunk = _send_chunk(mta.connection(), row.mail_from, batch, raw)
        except _Unreachable as exc:
            error, unreachable = str(exc), True
            break
        except (OSError, smtplib.SMTPException) as exc:  # the connection broke half-way
            mta.drop()
            if reconnected:
                error = _describe(exc)
                break
            log.info("outbox %s: %s; sending the chunk again", row.id, _describe(exc))
            reconnected = True
            continue
        todo = chunk.untried + todo[len(batch) :]
        deferred.update(chunk.deferred)
        refused.update(chunk.refused)
        done = set(chunk.accepted) | set(chunk.refused)
        if done:
            accepted_any = accepted_any or bool(chunk.accepted)
            remaining = [r for r in remaining if r not in done]
        # The progress of the last chunk is committed with the row's outcome, below.
        stale = time.monotonic() - renewed > lease(out).total_seconds() / 3
        if todo and (done or stale):
            if not _save(sessions, out, token, row.id, False, recipients=remaining):
                log.warning("outbox %s: another worker holds it now; stopping", row.id)
                return "skipped"
            renewed = time.monotonic()
    values: dict[str, Any] = {"recipients": remaining}
    if not remaining:
        outcome = "failed" if refused and not accepted_any else "sent"
    elif _expired(out, row.created_at):
        outcome = "failed"
        error = error or "recipients still deferred"
    else:
        outcome = "deferred"
        values["next_attempt_at"] = utcnow() + backoff(row.attempts, out)
    values["status"] = OutboxStatus.queued if outcome == "deferred" else OutboxStatus(outcome)
    summary = _summary(refused, deferred, error)
    if summary:
        values["last_error"] = summary
    for rcpt, reply in refused.items():
        log.warning("outbox %s: %s refused: %s", row.id, rcpt, reply)
    if not _save(sessions, out, token, row.id, True, **values):
        log.warning("outbox %s: another worker holds it now", row.id)
        outcome = "skipped"
    if unreachable:
        raise _Unreachable(error)
    return outcome
