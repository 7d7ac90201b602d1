"""The engine the SMTP front ends call: one object per process, built from the settings.

- :meth:`Engine.check_recipient` answers at RCPT: a list address is accepted, an address
  in a list domain that names no list gets 550 5.1.1, anything else passes untouched.
- :meth:`Engine.decide` answers at end of message with a :class:`~mtaplugin.verdict.Verdict`.
  Side effects that must happen before the 250 (a held post stored, the post counter)
  are committed in the same transaction before it returns.

Any failure to reach the database gives a 4xx (``TempFail``): the sender's MTA retries
and nothing is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, insert
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import addresses, pipeline, roster
from mtaplugin.counters import PostCounter, count_now
from mtaplugin.db import connection_scope, engine_of
from mtaplugin.errors import TryLater
from mtaplugin.i18n import _
from mtaplugin.message import Envelope, Post
from mtaplugin.model import BounceEvent, HeldMessage
from mtaplugin.snapshot import ListSnapshot, SnapshotCache
from mtaplugin.verdict import (
    Accept,
    Decision,
    Discard,
    Edits,
    ListOutcome,
    RecipientCheck,
    Reject,
    TempFail,
    Verdict,
    permanent,
    temporary,
)

log = logging.getLogger(__name__)

#: sub-addresses whose handling (email commands, confirmations) is not built yet; refused
#: at RCPT so that nothing is accepted and then lost
_NOT_YET = {"request", "confirm", "join", "leave", "subscribe", "unsubscribe"}


@dataclass(frozen=True)
class _Target:
    recipient: str
    found: roster.FoundList


class Engine:
    def __init__(self, sessions: sessionmaker[Session], site_owner: str = "") -> None:
        self.sessions = sessions
        self.db = engine_of(sessions)
        #: where -owner mail goes when a list has no owner or moderator (as in Mailman)
        self.site_owner = site_owner
        self.snapshots = SnapshotCache()
        self.counter = PostCounter(sessions)

    def start(self) -> None:
        """Start the background work of a long-running front end (the post counter)."""
        self.counter.start()

    def close(self) -> None:
        self.counter.close()

    # --- RCPT ---------------------------------------------------------------------------
    def _resolve(self, session: roster.DB, recipient: str) -> RecipientCheck:
        readings = addresses.candidates(recipient)
        if not readings:
            return RecipientCheck()
        found = roster.lookup_lists(session, readings)
        if found:
            hit = found[0]
            if hit.address.subaddress in _NOT_YET:
                return RecipientCheck(
                    permanent(
                        "5.3.3",
                        _(
                            "<{address}>: email commands are not handled on this server; "
                            "use the web pages or the REST API"
                        ).format(address=addresses.strip_brackets(recipient)),
                    ),
                    hit.list_id,
                    hit.address.subaddress,
                )
            return RecipientCheck(None, hit.list_id, hit.address.subaddress)
        if roster.domain_exists(session, readings[0].mail_host):
            return RecipientCheck(
                permanent(
                    "5.1.1",
                    _("<{address}>: no such list at {domain}").format(
                        address=addresses.strip_brackets(recipient),
                        domain=readings[0].mail_host,
                    ),
                )
            )
        return RecipientCheck()

    def check_recipient(self, recipient: str) -> RecipientCheck:
        try:
            with connection_scope(self.db) as conn:
                return self._resolve(conn, recipient)
        except TryLater as exc:
            return RecipientCheck(temporary("4.3.0", str(exc)))

    # --- end of message -----------------------------------------------------------------
    def decide(self, envelope: Envelope, raw: bytes) -> Verdict:
        try:
            with connection_scope(self.db) as conn:
                verdict, counted = self._decide(conn, envelope, raw)
            # Only a committed decision counts as a post.
            for pk in counted:
                self.counter.add(pk)
            return verdict
        except TryLater as exc:
            return TempFail(temporary("4.3.0", str(exc)))
        except Exception:
            # Never lose a post to a bug: the sender's MTA keeps it and retries.
            log.exception("internal error deciding on queue id %s", envelope.queue_id)
            return TempFail(
                temporary("4.3.0", _("internal error in the list manager; try again later"))
            )

    def _targets(self, conn: Connection, envelope: Envelope) -> tuple[list[_Target], list[str]]:
        """The list recipients, and the recipients that repeat one of them (``<Team@x>``
        beside ``<team@x>``): those are removed from the message and not decided twice."""
        targets: list[_Target] = []
        repeats: list[str] = []
        seen: set[tuple[int, str, str]] = set()
        for rcpt in envelope.recipients:
            readings = addresses.candidates(rcpt)
            found = roster.lookup_lists(conn, readings) if readings else []
            if not found:
                continue
            hit = found[0]
            key = (hit.pk, hit.address.subaddress, hit.address.extension)
            if key in seen:
                repeats.append(rcpt)
                continue
            seen.add(key)
            targets.append(_Target(rcpt, hit))
        return targets, repeats

    def _snapshot(self, conn: Connection, found: roster.FoundList) -> ListSnapshot:
        cached = self.snapshots.cached(found.pk, found.generation)
        if cached is not None:
            return cached
        # A miss: load it with the ORM, in this transaction.
        with Session(bind=conn) as session:
            return self.snapshots.get(session, found.pk, found.generation)

    def _decide(
        self, conn: Connection, envelope: Envelope, raw: bytes
    ) -> tuple[Verdict, list[int]]:
        targets, repeats = self._targets(conn, envelope)
        if not targets:
            return Accept(), []
        post = Post(raw)
        outcomes: list[ListOutcome] = []
        snapshots: list[ListSnapshot] = []
        for target in targets:
            found = target.found
            snap = self._snapshot(conn, found)
            snapshots.append(snap)
            sub = found.address.subaddress
            if sub == "":
                outcome = pipeline.process(snap, envelope, post, target.recipient)
            elif sub == "owner":
                outcome = self._to_owners(snap, target.recipient)
            elif sub == "bounces":
                outcome = ListOutcome(found.list_id, target.recipient, Decision.discard)
            else:
                outcome = ListOutcome(
                    found.list_id,
                    target.recipient,
                    Decision.reject,
                    reply=permanent("5.3.3", _("email commands are not handled on this server")),
                )
            outcomes.append(outcome)
        rejected = [o for o in outcomes if o.decision is Decision.reject]
        if rejected:
            # One SMTP reply covers the whole message, so one refusing list refuses it for
            # all: the sender is told, and no list got a copy the sender thinks was refused.
            # Nothing was written yet: the decisions above only read.
            assert rejected[0].reply is not None
            return Reject(rejected[0].reply, tuple(outcomes)), []
        counted: list[int] = []
        outcomes = [
            self._persist(conn, envelope, post, o, t, snap, counted)
            for o, t, snap in zip(outcomes, targets, snapshots, strict=True)
        ]
        return self._combine(envelope, outcomes, repeats), counted

    def _to_owners(self, snap: ListSnapshot, recipient: str) -> ListOutcome:
        owners = snap.staff
        if not owners and self.site_owner:
            owners = (self.site_owner,)
        return ListOutcome(snap.mlist.list_id, recipient, Decision.accept, recipients=owners)

    def _persist(
        self,
        conn: Connection,
        envelope: Envelope,
        post: Post,
        outcome: ListOutcome,
        target: _Target,
        snap: ListSnapshot,
        counted: list[int],
    ) -> ListOutcome:
        pk = target.found.pk
        if outcome.decision is Decision.hold:
            held_id = conn.scalar(
                insert(HeldMessage)
                .values(
                    mailing_list_id=pk,
                    message_id=post.message_id,
                    sender=post.from_address,
                    subject=post.subject,
                    reasons=[[r.rule, r.text] for r in outcome.reasons],
                    envelope=envelope.as_record(),
                    raw=post.raw,
                )
                .returning(HeldMessage.id)
            )
            return ListOutcome(
                outcome.list_id,
                outcome.recipient,
                outcome.decision,
                outcome.reasons,
                held_id=held_id,
            )
        if target.found.address.subaddress == "bounces":
            conn.execute(
                insert(BounceEvent).values(
                    mailing_list_id=pk,
                    email=addresses.strip_brackets(target.recipient).lower(),
                    message_id=post.message_id,
                    raw=post.raw,
                )
            )
        elif outcome.decision is Decision.accept and target.found.address.subaddress == "":
            if "%d" in snap.mlist.subject_prefix:
                count_now(conn, pk)  # the members see the number: exact, at once
            else:
                counted.append(pk)  # batched, once the transaction has committed
        return outcome

    @staticmethod
    def _combine(
        envelope: Envelope, outcomes: list[ListOutcome], repeats: Sequence[str] = ()
    ) -> Verdict:
        list_rcpts = {o.recipient for o in outcomes} | set(repeats)
        others = [r for r in envelope.recipients if r not in list_rcpts]
        present = {addresses.strip_brackets(r).lower() for r in others}
        added: list[str] = []
        for outcome in outcomes:
            for email in outcome.recipients:
                if email not in present:
                    present.add(email)
                    added.append(email)
        if not others and not added:
            return Discard(tuple(outcomes))
        return Accept(
            Edits(
                del_recipients=(*(o.recipient for o in outcomes), *repeats),
                add_recipients=tuple(added),
            ),
            tuple(outcomes),
        )
