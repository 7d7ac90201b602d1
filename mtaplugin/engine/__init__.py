"""The list engine the SMTP front ends call: one object per process, built from the settings.

- :meth:`ListEngine.check_recipient` answers at RCPT: a list address is accepted, an
  address in a list domain that names no list gets 550 5.1.1, anything else passes
  untouched (:mod:`~mtaplugin.engine.recipients`).
- :meth:`ListEngine.decide` answers at end of message with a
  :data:`~mtaplugin.posting.verdict.Verdict` (:mod:`~mtaplugin.engine.decide`).  Side
  effects that must happen before the 250 (a held post stored, the post counter, the
  accepted post's journal row) are committed in the same transaction before it returns
  (:mod:`~mtaplugin.engine.persist`); the archive, the digest and the queues get an
  accepted post after the answer, from the worker (:mod:`mtaplugin.accepted`).

Any failure to reach the database gives a 4xx (``TempFail``): the sender's MTA retries
and nothing is lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from sqlalchemy import Connection
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import Clock, system_clock
from mtaplugin.commands.mail import CommandPolicy
from mtaplugin.config import ArchiversSettings
from mtaplugin.copies import paths
from mtaplugin.copies.return_path import VerpPolicy
from mtaplugin.db import (
    Opener,
    connection_scope,
    engine_of,
    unavailable_as_trylater,
)
from mtaplugin.engine import atlists, decision_log, nonmembers, rates, recipients
from mtaplugin.engine import decide as deciding
from mtaplugin.engine.decide import Done
from mtaplugin.engine.known_domains import in_domains
from mtaplugin.engine.persist import Transaction, persist
from mtaplugin.engine.recipients import Target
from mtaplugin.errors import DatabaseBusy, TryLater
from mtaplugin.i18n import _
from mtaplugin.lists import roster
from mtaplugin.lists.cache import SnapshotCache
from mtaplugin.lists.counters import PostCounter
from mtaplugin.lists.domain_set import ListDomains
from mtaplugin.mailauth.identity import AuthenticationPolicy, identify
from mtaplugin.mailauth.service import Deliverability
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.posting.rules.base import SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.verdict import (
    Accept,
    Accepted,
    Deferred,
    Held,
    RecipientCheck,
    Refused,
    Reject,
    TempFail,
    Verdict,
    temporary,
)
from mtaplugin.vocabulary.addresses import Subaddress
from mtaplugin.vocabulary.envelope import Envelope, Post

log = logging.getLogger(__name__)

#: the lists a transaction's recipients name, as its RCPT lookups found them
Found = dict[str, roster.FoundList]

#: how many times a decision refused SQLite's write lock is made again (see
#: ListEngine._decide_committed); PostgreSQL never answers that way
BUSY_RETRIES = 2


class _Undo(Exception):
    """Rolls a claimed decision back (:meth:`ListEngine.decide_claimed`)."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__()
        self.verdict = verdict


class ListEngine:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        site_owner: str = "",
        site_policy: SitePolicy | None = None,
        auth_policy: AuthenticationPolicy | None = None,
        max_autoresponses_per_day: int = 1,
        expand_in_place_max: int = 1000,
        secret_key: str = "",
        mailauth: Deliverability | None = None,
        command_policy: CommandPolicy | None = None,
        clock: Clock = system_clock,
        verp: VerpPolicy | None = None,
        archivers: ArchiversSettings | None = None,
        known_domains: Callable[[], frozenset[str] | None] | None = None,
    ) -> None:
        self.sessions = sessions
        #: the site's external archivers ([archivers]): the members' copy links them
        self.archivers = archivers or ArchiversSettings()
        #: the list domains as last written for Postfix (None: not known): when the
        #: database cannot answer, mail for other domains goes on untouched
        self.known_domains = known_domains or (lambda: None)
        #: signs one-click unsubscribe links (site.secret_key); "" = none
        self.secret_key = secret_key
        #: DNS and keys: incoming authentication, DMARC policies, DKIM signature + ARC seal
        self.mailauth = mailauth or Deliverability()
        #: email commands, confirmations and moderation by reply (-request, -confirm, ...)
        self.command_policy = command_policy or CommandPolicy(
            workflow=WorkflowSettings(site_owner=site_owner)
        )
        #: the largest roster the milter expands in place (above: the outbox)
        self.expand_in_place_max = expand_in_place_max
        #: which posts go VERPed (never in place: the outbox sends them)
        self.verp = verp or VerpPolicy()
        self.site_policy = site_policy or SitePolicy()
        self.auth_policy = auth_policy or AuthenticationPolicy()
        #: notices to one poster per list and kind, per day
        self.max_autoresponses_per_day = max_autoresponses_per_day
        self.db = engine_of(sessions)
        #: where -owner mail goes when a list has no owner or moderator (as in Mailman)
        self.site_owner = site_owner
        #: the time on the decide path (the post counter's last_post_at)
        self.clock = clock
        #: is a domain a list domain?  Each answer kept a few seconds (a domain never asked
        #: before is asked at once): mail for other domains costs no query per message
        self.list_domains = ListDomains(self.db)
        self.snapshots = SnapshotCache()
        self.counter = PostCounter(sessions, clock=clock)
        #: the RCPT lookups' reads and the decisions' transactions (SQLite's kept connections)
        self.connections = roster.KeptConnections(self.db)

    def start(self) -> None:
        """Start the background work of a long-running front end (the post counter)."""
        self.counter.start()

    def close(self) -> None:
        self.counter.close()
        self.connections.close()

    # --- RCPT ---------------------------------------------------------------------------
    def check_recipient(self, recipient: str, found: Found | None = None) -> RecipientCheck:
        """``found``: where a list recipient's list is kept for :meth:`decide` (a front end
        that decides the same transaction at end of message; not looked up again)."""
        try:
            readings = recipients.in_list_domain(recipient, self.list_domains)
            if not readings:
                return RecipientCheck()  # not a list domain: no query (list_domains)
            # Reads only: no transaction begun (KeptConnections.rows)
            with unavailable_as_trylater():
                check, hit = recipients.answer(self.connections, recipient, readings, self.clock())
            if hit is not None and found is not None and check.reply is None:
                found[recipient] = hit
            return check
        except TryLater as exc:
            if self._not_list_mail([recipient]):
                return RecipientCheck()
            return RecipientCheck(temporary("4.3.0", str(exc)))

    def _not_list_mail(self, addresses: list[str]) -> bool:
        """Whether the list domains are known without the database and none of
        ``addresses`` is in one."""
        known = self.known_domains()
        return known is not None and not any(in_domains(a, known) for a in addresses)

    # --- end of message -----------------------------------------------------------------
    def decide(
        self, envelope: Envelope, raw: bytes, in_place: bool = True, found: Found | None = None
    ) -> Verdict:
        """``in_place=False`` for front ends that cannot edit the transaction (LMTP, the
        pipe, Exim's ACL): every accepted list copy goes through the outbox, never an
        in-place expansion (with only list recipients the verdict is then a Discard).
        ``found``: the lists :meth:`check_recipient` found for this transaction."""
        verdict = self._decide_once(envelope, raw, in_place, found or {})
        decision_log.record(envelope, raw, verdict)
        return verdict

    def _decide_once(self, envelope: Envelope, raw: bytes, in_place: bool, found: Found) -> Verdict:
        try:
            verdict, counted = self._decide_committed(envelope, raw, in_place, found)
            # Only a committed decision counts as a post.
            for pk in counted:
                self.counter.add(pk)
            return verdict
        except TryLater as exc:
            if self._not_list_mail(envelope.recipients):
                log.warning("list database down; no list recipient, passed: %s", exc)
                return Accept()
            return TempFail(temporary("4.3.0", str(exc)))
        except Exception:
            # Never lose a post to a bug: the sender's MTA keeps it and retries.
            log.exception("internal error deciding on queue id %s", envelope.queue_id)
            return TempFail(
                temporary("4.3.0", _("internal error in the list manager; try again later"))
            )

    def _decide_committed(
        self, envelope: Envelope, raw: bytes, in_place: bool, found: Found
    ) -> tuple[Verdict, list[int]]:
        """One decision in one transaction.  SQLite's write lock refused ("database is
        locked") rolls the whole decision back; it is then decided again, up to
        :data:`BUSY_RETRIES` times: when SQLite refuses at once to avoid a deadlock, only
        a new transaction can go on (nothing was stored, nothing was sent)."""
        for attempt in range(BUSY_RETRIES + 1):
            try:
                with self.connections.transaction() as opened:
                    return self._decide(opened, envelope, raw, in_place, found)
            except DatabaseBusy as exc:
                if attempt == BUSY_RETRIES:
                    raise
                log.warning(
                    "queue id %s: %s; deciding again (%d of %d)",
                    envelope.queue_id,
                    exc,
                    attempt + 1,
                    BUSY_RETRIES,
                )
                time.sleep(0.02 * (attempt + 1))
        raise AssertionError("unreachable")

    def decide_claimed(
        self, claim: Callable[[Connection], bool], envelope: Envelope, raw: bytes
    ) -> Verdict | None:
        """:meth:`decide` (through the outbox) for a post that must be decided exactly once,
        such as an article gated from a newsgroup: ``claim(conn)`` runs first, in the
        decision's own transaction, and marks the post taken (a watermark moved on).  When
        it answers False, someone else took it: nothing is decided (None).  A decision
        that cannot be made now (a 4xx) rolls the claim back with everything else."""
        verdict = self._decide_claimed(claim, envelope, raw)
        if verdict is not None:
            decision_log.record(envelope, raw, verdict)
        return verdict

    def _decide_claimed(
        self, claim: Callable[[Connection], bool], envelope: Envelope, raw: bytes
    ) -> Verdict | None:
        try:
            with connection_scope(self.db) as conn:
                if not claim(conn):
                    return None
                verdict, counted = self._decide(lambda: conn, envelope, raw, False)
                if isinstance(verdict, TempFail):
                    raise _Undo(verdict)
        except _Undo as undo:
            return undo.verdict
        except TryLater as exc:
            return TempFail(temporary("4.3.0", str(exc)))
        except Exception:
            log.exception("internal error deciding on %s", envelope.queue_id or "a claimed post")
            return TempFail(
                temporary("4.3.0", _("internal error in the list manager; try again later"))
            )
        for pk in counted:
            self.counter.add(pk)
        return verdict

    def _snapshot(self, db: Opener, found: roster.FoundList) -> ListSnapshot:
        cached = self.snapshots.cached(found.pk, found.generation)
        if cached is not None:
            return cached
        # A miss: load it with the ORM, in this transaction.
        with Session(bind=db()) as session:
            return self.snapshots.get(session, found.pk, found.generation)

    def _decide(
        self,
        db: Opener,
        envelope: Envelope,
        raw: bytes,
        may_edit: bool = True,
        found: Found | None = None,
    ) -> tuple[Verdict, list[int]]:
        """``db()``: the decision's transaction, begun when first called."""
        targets, repeats = recipients.targets(db, envelope, self.list_domains, found or {})
        if not targets:
            return Accept(), []
        post = Post(raw)
        # With verify_incoming, our own checks alone back the sender's identity (no header
        # of the post is read); without, a trusted verifier's topmost results are read by
        # identify() itself, and again for the ARC set only if one is made.
        mailauth = self.mailauth
        checked = mailauth.authenticate(post, envelope) if mailauth.verify_incoming else None
        identity = identify(
            post,
            envelope,
            self.auth_policy,
            verified=checked.signals if checked is not None else None,
        )
        snapshots = [self._snapshot(db, t.found) for t in targets]
        posted = [
            s for s, t in zip(snapshots, targets, strict=True) if t.subaddress is Subaddress.posting
        ]
        # One DMARC lookup for the post, only when a list addressed mitigates; DNS that
        # cannot answer raises TryLater (4xx) unless dns.on_failure = "mitigate".
        facts = deciding.Facts(
            dmarc=mailauth.dmarc_policy(post.from_address, [s.mlist for s in posted]),
            results=lambda: mailauth.results_text(
                checked if checked is not None else mailauth.authenticate(post, envelope)
            ),
            recent=self._recent_posts(db, post, posted),
            member_of=atlists.memberships(db, self.snapshots, post.from_address, posted),
        )
        outcomes = [
            deciding.outcome_for(
                t, snap, envelope, post, identity, facts, self.site_policy, self.site_owner
            )
            for t, snap in zip(targets, snapshots, strict=True)
        ]
        deferred = [o for o in outcomes if isinstance(o, Deferred)]
        if deferred:
            # A list that cannot decide now defers the whole post: nothing is written.
            return TempFail(deferred[0].reply), []
        list_rcpts = {t.recipient for t in targets} | set(repeats)
        others = [r for r in envelope.recipients if r not in list_rcpts]
        refused = [o for o in outcomes if isinstance(o, Refused)]
        if len(refused) == len(outcomes) and not others:
            # Every recipient is refused: one 5xx tells the sender, nothing is written
            # but the poster on the lists' nonmember rosters (as Mailman records them).
            nonmembers.record_refused(
                db(), post.from_address, targets, snapshots, outcomes, self.clock()
            )
            return Reject(refused[0].reply, tuple(outcomes)), []
        # One copy for all, fanned out by the MTA -- unless the members get their own
        # copies (one-click links, personalized footers) or the list is anonymous: then
        # the outbox.
        first = outcomes[0]
        in_place = (
            may_edit
            and len(targets) == 1
            and not others
            and (not isinstance(first, Accepted) or len(first.members) <= self.expand_in_place_max)
            and not (
                targets[0].subaddress is Subaddress.posting
                and paths.not_in_place(
                    snapshots[0].mlist, snapshots[0].listinfo_url, self.secret_key
                )
            )
        )
        tx = Transaction(self, db, envelope, post, identity, facts, in_place)
        try:
            done = [
                persist(tx, t, snap, o)
                for o, t, snap in zip(outcomes, targets, snapshots, strict=True)
            ]
            tx.flush()
        finally:
            tx.close()
        if facts.recent is not None:
            self._count_posts(db(), post, targets, done)
        return deciding.combine(done, others, repeats, in_place), tx.counted

    def _recent_posts(
        self, db: Opener, post: Post, posted: Sequence[ListSnapshot]
    ) -> dict[str, int] | None:
        """The last hour's post counts the rate limits read (None when none is on);
        ``posted``: the snapshots of the lists the post was sent to for posting."""
        if not self.site_policy.counts_posts:
            return None
        keys = rates.keys([s.mlist.list_id for s in posted], post.from_address)
        return rates.last_hour(db(), keys, self.clock()) if keys else None

    def _count_posts(
        self, conn: Connection, post: Post, targets: Sequence[Target], done: Sequence[Done]
    ) -> None:
        """Count the post for its sender and for every list that accepted or held it."""
        ids = [
            d.outcome.list_id
            for d, t in zip(done, targets, strict=True)
            if t.subaddress is Subaddress.posting and isinstance(d.outcome, Accepted | Held)
        ]
        rates.count(conn, rates.keys(ids, post.from_address), self.clock())
