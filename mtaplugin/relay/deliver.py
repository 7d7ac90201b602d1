"""Delivery: one pass over what is due in the outbox, and the attempt on each row.

A :class:`Delivery` is given its world: the database sessions, the ``[outbound]``
settings, the :class:`~mtaplugin.relay.smtp.Transport`, the sealer and the clock.  The
worker calls :meth:`Delivery.run`, which makes one pass:

1. **Claim.**  One statement picks up to ``outbox.batch_size`` due rows that nobody
   holds and writes a lease on them (:mod:`mtaplugin.outbox.store`).  On PostgreSQL the
   rows are picked ``FOR UPDATE SKIP LOCKED``, so workers on several mail hosts never pick
   the same row; SQLite has one writer at a time, and the statement re-checks the lease.
2. **Send.**  One connection to the MTA carries the whole pass, reset between rows; a
   connection that breaks is opened again (a chunk cut off by a broken connection is sent
   once more on the new one).  A row's recipients go out in chunks of the transport's
   ``max_recipients`` (one recipient per chunk when members get their own copies, or when
   a VERPed post goes without ``outbox.xverp``: each member's chunk then leaves from its
   own ``list-bounces+member=domain@`` sender; with ``outbox.xverp`` the chunk asks the
   MTA for ``XVERP`` and the MTA writes each member's sender).  After
   each chunk the MTA took (its 250 to the end of data), how far the attempt got is
   committed, and the lease renewed, before the next chunk starts: an offset into the
   row's recipients (which are written when the row is queued, and not again until the
   attempt settles: a 100 000-member post is not rewritten 200 times) and the few
   recipients before it still to do (deferred, or not tried when the MTA hung up).  That
   commit names this pass: if another worker holds the row now (the lease ran out), this
   pass stops sending that row at once.
3. **Settle.**  When every recipient is done the row is ``sent``; recipients deferred
   (4xx) stay in the row, which is tried again after ``outbox.backoff_first`` seconds,
   doubling up to ``outbox.backoff_max``; a row still deferred ``outbox.retry_period``
   after it was queued, or whose every recipient was refused for good (5xx), is
   ``failed``.  A member of a list copy (a row of kind ``post``, ``release`` or
   ``digest``) refused for good gets a bounce event, committed with the save that takes
   them off the row (:mod:`mtaplugin.bounces.refused`).  An unreachable MTA defers every
   row of the pass.  Each row's lease is given back with its outcome, and a pass stopped
   by SIGTERM gives back the rows it did not reach, so that the next worker need not wait
   for their leases to run out.

What a crash (``kill -9``, power loss, the database gone) can do
----------------------------------------------------------------
*Nothing is lost.*  The offset passes a recipient only in a commit made after the MTA
answered 250 (or 5xx) for it, and one it deferred is kept in the row's ``retry`` by that
same commit; until then it stays ahead of the offset, and once the dead worker's lease has
run out another pass sends it (a recipient deferred before the kill is tried again at once,
not after its back-off).

*At most one chunk per crash is sent twice*: the chunk whose 250 was in flight -- the MTA
has queued it, but the commit that records it was not made.  SMTP gives the client no way
to close that window (the server's 250 is its commit, and no protocol step follows it that
could make the two atomic; RFC 1047), so between losing the chunk and sending it again,
mtaplugin sends it again: at most ``outbox.max_recipients`` recipients get a second
copy, with the same Message-ID (which their MUA or a Message-ID filter can drop).  The same
holds for a connection broken after the end of data, and for a worker stalled for longer
than its lease (a frozen VM): another worker may send the chunk it had in flight, and the
stalled one notices at its next commit and stops.  Chunks committed before the crash are
never sent again.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.bounces import refused as refused_copies
from mtaplugin.clock import Clock, system_clock
from mtaplugin.config import OutboxSettings
from mtaplugin.copies.return_path import VerpPolicy
from mtaplugin.enums import OutboxStatus
from mtaplugin.errors import TryLater
from mtaplugin.model import BounceEvent
from mtaplugin.outbox.store import Row, Store, lease, new_token
from mtaplugin.relay.copies import Copies, Sealer, Senders
from mtaplugin.relay.smtp import Connection, ConnectionLost, Replies, Transport, Unreachable

log = logging.getLogger(__name__)

#: at most this many recipients are named in ``last_error``
ERROR_NAMES = 10


class Attempt(enum.Enum):
    """How one attempt on a row ended."""

    #: every recipient done, and the MTA took at least one (or nobody was refused)
    sent = "sent"
    #: every recipient refused for good, or still deferred after the retry period
    failed = "failed"
    #: recipients left for a later attempt, after the back-off
    deferred = "deferred"
    #: another worker holds the row now, or it is no longer queued: nothing written
    skipped = "skipped"
    #: the pass was stopped half-way: the row is given back, due at once
    released = "released"


#: the row's status after an attempt that settled it
_SETTLED = {
    Attempt.sent: OutboxStatus.sent,
    Attempt.failed: OutboxStatus.failed,
    Attempt.deferred: OutboxStatus.queued,
}


@dataclass
class PassResult:
    """What one pass did."""

    claimed: int = 0
    sent: int = 0
    deferred: int = 0
    failed: int = 0

    def count(self, attempt: Attempt) -> None:
        if attempt is Attempt.sent:
            self.sent += 1
        elif attempt is Attempt.failed:
            self.failed += 1
        elif attempt is Attempt.deferred:
            self.deferred += 1


@dataclass(eq=False)
class Delivery:
    """Passes over the outbox, with the world they are given."""

    sessions: sessionmaker[Session]
    out: OutboxSettings
    _: KW_ONLY
    transport: Transport
    sealer: Sealer | None = None
    clock: Clock = system_clock
    #: signs the one-click unsubscribe links of the members' own copies
    secret_key: str = field(default="", repr=False)
    #: which list posts go VERPed (by the row's post number)
    verp: VerpPolicy = field(default_factory=VerpPolicy)
    store: Store = field(init=False)
    #: rows a pass could not give back because the database failed under it: given
    #: back at the start of the next pass, instead of waiting out their lease
    #: (10 x ``outbox.timeout``) after every database blip
    _unreleased: list[tuple[str, list[int]]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.store = Store(self.sessions, self.out, self.clock)

    def run(
        self, limit: int | None = None, should_stop: Callable[[], bool] | None = None
    ) -> PassResult:
        """Claim up to ``limit`` (default ``outbox.batch_size``) due rows and send them
        over one connection.

        ``should_stop`` is asked between chunks: when it says yes, the pass commits where
        it is and gives back every row it holds.  Raises :class:`TryLater` if the database
        cannot be reached (the rows held are given back by the next pass that reaches it,
        or come back when their lease runs out).
        """
        stop = should_stop or (lambda: False)
        result = PassResult()
        while self._unreleased:  # TryLater while the database is still down
            self.store.release(*self._unreleased[0])
            self._unreleased.pop(0)
        if not self.store.anything_due():
            return result  # the idle worker's once-a-second question is a read
        token = new_token()
        ids = self.store.claim(token, self.out.batch_size if limit is None else limit)
        result.claimed = len(ids)
        if not ids:
            return result
        conn = self.transport.open()
        reached = 0
        try:
            for index, row_id in enumerate(ids):
                if stop():
                    break
                if index:
                    conn.reset()
                try:
                    attempt = self._attempt(token, row_id, conn, stop)
                except Unreachable as exc:
                    reached = len(ids)
                    result.deferred += 1 + self.store.defer(token, ids[index + 1 :], str(exc))
                    break
                except TryLater:
                    raise
                except Exception as exc:  # a bug or an odd row: it must not stop the others
                    log.exception("outbox %s: delivery failed", row_id)
                    conn.drop()
                    self.store.defer(token, [row_id], f"{type(exc).__name__}: {exc}")
                    attempt = Attempt.deferred
                reached = index + 1
                result.count(attempt)
        finally:
            conn.close()
            if ids[reached:]:
                try:
                    self.store.release(token, ids[reached:])
                except TryLater:
                    self._unreleased.append((token, ids[reached:]))
        log.info(
            "outbox: %d sent, %d deferred, %d failed of %d claimed",
            result.sent,
            result.deferred,
            result.failed,
            result.claimed,
        )
        return result

    def _attempt(
        self, token: str, row_id: int, conn: Connection, stop: Callable[[], bool]
    ) -> Attempt:
        """One attempt on one row.  Raises :class:`Unreachable` after settling the row
        when the MTA cannot be reached."""
        row = self.store.take(token, row_id)
        if row is None:
            return Attempt.skipped
        base = row.recipients  # written once; ``offset`` says how far delivery got
        offset = min(row.progress, len(base))
        #: recipients before ``offset`` to try in this attempt, first: an earlier attempt's
        #: leftovers (it crashed or was stopped), or those the MTA did not try
        front = list(row.retry)
        #: recipients before ``offset`` deferred in this attempt (tried after the back-off)
        later: list[str] = []
        deferred: dict[str, str] = {}
        refused: dict[str, str] = {}
        #: refused members whose bounce events go with the next commit
        unrecorded: dict[str, str] = {}
        accepted_any = False
        error = ""
        unreachable = False
        reconnected = False
        renewed = self.clock()
        copies = Copies(self.sessions, self.sealer, self.secret_key, row)
        senders = Senders(row, self.verp.verped(row.post_number, copies.own), self.out.xverp)
        while front or offset < len(base):
            if stop():
                saved = self.store.save(
                    token, row.id, progress=offset, retry=front + later, release=True
                )
                return Attempt.released if saved else Attempt.skipped
            one = copies.own or senders.one_per_recipient
            size = 1 if one else self.transport.max_recipients
            from_front = bool(front)
            batch = front[:size] if from_front else base[offset : offset + size]
            raw = copies.for_recipient(batch[0])
            try:
                if senders.xverp:
                    replies = conn.send(row.mail_from, batch, raw, xverp=True)
                else:
                    replies = conn.send(senders.mail_from(batch[0]), batch, raw)
            except Unreachable as exc:
                error, unreachable = str(exc), True
                break
            except ConnectionLost as exc:  # the connection broke half-way
                if reconnected:
                    error = str(exc)
                    break
                log.info("outbox %s: %s; sending the chunk again", row.id, exc)
                reconnected = True
                continue
            if from_front:
                front = replies.untried + front[len(batch) :]
            else:
                offset += len(batch)
                front = list(replies.untried)
            later.extend(r for r in batch if r in replies.deferred)
            deferred.update(replies.deferred)
            refused.update(replies.refused)
            unrecorded.update(replies.refused)
            done = _done(replies)
            if done:
                accepted_any = accepted_any or bool(replies.accepted)
            # The progress of the last chunk is committed with the row's outcome, below.
            stale = (self.clock() - renewed).total_seconds() > lease(self.out).total_seconds() / 3
            if (front or offset < len(base)) and (done or stale):
                records = self._bounces(row, unrecorded)
                if not self.store.save(
                    token,
                    row.id,
                    progress=offset,
                    retry=front + later,
                    release=False,
                    records=records,
                ):
                    log.warning("outbox %s: another worker holds it now; stopping", row.id)
                    return Attempt.skipped
                unrecorded = {}
                renewed = self.clock()
        remaining = later + front + base[offset:]
        next_attempt_at: datetime | None = None
        if not remaining:
            attempt = Attempt.failed if refused and not accepted_any else Attempt.sent
        elif self.store.expired(row.created_at):
            attempt = Attempt.failed
            error = error or "recipients still deferred"
        else:
            attempt = Attempt.deferred
            next_attempt_at = self.store.next_attempt(row.attempts)
        for rcpt, reply in refused.items():
            log.warning("outbox %s: %s refused: %s", row.id, rcpt, reply)
        saved = self.store.save(
            token,
            row.id,
            progress=0,
            retry=[],
            recipients=remaining,
            release=True,
            status=_SETTLED[attempt],
            next_attempt_at=next_attempt_at,
            last_error=_summary(refused, deferred, error),
            records=self._bounces(row, unrecorded),
        )
        if not saved:
            log.warning("outbox %s: another worker holds it now", row.id)
            attempt = Attempt.skipped
        if unreachable:
            raise Unreachable(error)
        return attempt

    def _bounces(self, row: Row, refused: dict[str, str]) -> list[BounceEvent]:
        """A list copy's members refused for good: their bounce events."""
        if row.kind not in refused_copies.MEMBER_COPIES or row.mailing_list_id is None:
            return []
        return refused_copies.events(row.mailing_list_id, refused, row.raw, self.clock())


def _done(replies: Replies) -> set[str]:
    """The recipients a transaction finished with: taken, or refused for good."""
    return set(replies.accepted) | set(replies.refused)


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
