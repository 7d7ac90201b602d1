"""The engine the SMTP front ends call: one object per process, built from the settings.

- :meth:`Engine.check_recipient` answers at RCPT: a list address is accepted, an address
  in a list domain that names no list gets 550 5.1.1, anything else passes untouched.
- :meth:`Engine.decide` answers at end of message with a
  :class:`~mtaplugin.posting.verdict.Verdict`.
  Side effects that must happen before the 250 (a held post stored, the post counter)
  are committed in the same transaction before it returns.

Any failure to reach the database gives a 4xx (``TempFail``): the sender's MTA retries
and nothing is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from sqlalchemy import Connection
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import commands, notices
from mtaplugin.commands import dispatch, replies
from mtaplugin.config import Settings
from mtaplugin.copies import delivery, transforms
from mtaplugin.db import connection_scope, engine_of
from mtaplugin.errors import TryLater
from mtaplugin.i18n import _, set_default_language
from mtaplugin.lists import roster
from mtaplugin.lists.counters import PostCounter, count_now
from mtaplugin.lists.snapshot import ListSnapshot, SnapshotCache
from mtaplugin.mailauth import service
from mtaplugin.mailauth.dmarc import DmarcPolicy
from mtaplugin.mailauth.identity import AuthenticationPolicy, SenderIdentity, identify
from mtaplugin.mailauth.service import Deliverability, SealInfo
from mtaplugin.manage import held as held_ops
from mtaplugin.manage.members import language_of
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import BounceEvent, HeldMessage
from mtaplugin.model.enums import ResponseAction
from mtaplugin.notices import may_respond
from mtaplugin.outbox import deliver
from mtaplugin.posting import addresses, pipeline
from mtaplugin.posting.envelope import Envelope, Post
from mtaplugin.posting.rules.base import SitePolicy
from mtaplugin.posting.verdict import (
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


@dataclass(frozen=True)
class _Target:
    recipient: str
    found: roster.FoundList


class _Facts:
    """What the engine learnt about the post before the rules ran."""

    def __init__(self, dmarc: DmarcPolicy | None, results: Callable[[], str]) -> None:
        #: the From: domain's DMARC policy (looked up only when a list addressed mitigates)
        self.dmarc = dmarc
        self._results = results

    @cached_property
    def results(self) -> str:
        """The incoming authentication results, as the ARC set records them ("" if none);
        made only when something records them (a seal, a hold, an outbox copy): the usual
        post to a list without a DKIM key never needs them."""
        return self._results()


class Engine:
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
        command_policy: dispatch.CommandPolicy | None = None,
    ) -> None:
        self.sessions = sessions
        #: signs one-click unsubscribe links (site.secret_key); "" = none
        self.secret_key = secret_key
        #: DNS and keys: incoming authentication, DMARC policies, DKIM signature + ARC seal
        self.mailauth = mailauth or Deliverability()
        #: email commands, confirmations and moderation by reply (-request, -confirm, ...)
        self.command_policy = command_policy or dispatch.CommandPolicy(
            workflow=WorkflowSettings(site_owner=site_owner)
        )
        #: the largest roster the milter expands in place (above: the outbox)
        self.expand_in_place_max = expand_in_place_max
        self.site_policy = site_policy or SitePolicy()
        self.auth_policy = auth_policy or AuthenticationPolicy()
        #: notices to one poster per list and kind, per day
        self.max_autoresponses_per_day = max_autoresponses_per_day
        self.db = engine_of(sessions)
        #: where -owner mail goes when a list has no owner or moderator (as in Mailman)
        self.site_owner = site_owner
        self.snapshots = SnapshotCache()
        self.counter = PostCounter(sessions)

    @classmethod
    def from_settings(cls, settings: Settings) -> Engine:
        from mtaplugin.db import make_engine, sessionmaker_for
        from mtaplugin.model.enums import Action
        from mtaplugin.posting.rules.headers import parse_header_lines

        rules = settings.rules
        set_default_language(settings.site.default_language)
        ids = settings.authentication.trusted_authserv_ids.replace(",", " ").split()
        return cls(
            sessionmaker_for(make_engine(settings.database.url, settings.database.timeout)),
            site_owner=settings.site.site_owner,
            site_policy=SitePolicy(
                header_checks=tuple(parse_header_lines(rules.header_checks)),
                header_match_action=Action(rules.header_match_action),
                email_commands_max_lines=rules.email_commands_max_lines,
            ),
            auth_policy=AuthenticationPolicy(
                trusted_authserv_ids=frozenset(i.lower() for i in ids),
                trust_sasl_senders=settings.authentication.trust_sasl_senders,
            ),
            max_autoresponses_per_day=rules.max_autoresponses_per_day,
            expand_in_place_max=settings.outbound.expand_in_place_max,
            secret_key=settings.site.secret_key,
            mailauth=Deliverability.from_settings(settings),
            command_policy=dispatch.CommandPolicy(
                workflow=WorkflowSettings.from_settings(settings),
                max_lines=rules.email_commands_max_lines,
                replies_per_day=rules.email_command_replies_per_day,
            ),
        )

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
            refusal = dispatch.check_recipient(session, hit, recipient)
            return RecipientCheck(refusal, hit.list_id, hit.address.subaddress)
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
    def decide(self, envelope: Envelope, raw: bytes, in_place: bool = True) -> Verdict:
        """``in_place=False`` for front ends that cannot edit the transaction (LMTP, the
        pipe, Exim's ACL): every accepted list copy goes through the outbox, never an
        in-place expansion (with only list recipients the verdict is then a Discard)."""
        try:
            with connection_scope(self.db) as conn:
                verdict, counted = self._decide(conn, envelope, raw, in_place)
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
        self, conn: Connection, envelope: Envelope, raw: bytes, may_edit: bool = True
    ) -> tuple[Verdict, list[int]]:
        targets, repeats = self._targets(conn, envelope)
        if not targets:
            return Accept(), []
        post = Post(raw)
        # Our own checks back the sender's identity; a trusted verifier's results are read
        # by identify() itself, and again for the ARC set only if one is made.
        checked = (
            self.mailauth.authenticate(post, envelope) if self.mailauth.verify_incoming else None
        )
        identity = identify(
            post,
            envelope,
            self.auth_policy,
            verified=checked.signals if checked is not None and not checked.source else (),
        )
        snapshots = [self._snapshot(conn, t.found) for t in targets]
        # One DMARC lookup for the post, only when a list addressed mitigates; DNS that
        # cannot answer raises TryLater (4xx) unless dns.on_failure = "mitigate".
        facts = _Facts(
            dmarc=self.mailauth.dmarc_policy(
                post.from_address,
                [
                    s.mlist
                    for s, t in zip(snapshots, targets, strict=True)
                    if not t.found.address.subaddress
                ],
            ),
            results=lambda: self.mailauth.results_text(
                checked if checked is not None else self.mailauth.authenticate(post, envelope)
            ),
        )
        outcomes: list[ListOutcome] = []
        for target, snap in zip(targets, snapshots, strict=True):
            found = target.found
            sub = found.address.subaddress
            if sub == "":
                outcome = pipeline.process(
                    snap,
                    envelope,
                    post,
                    target.recipient,
                    identity,
                    self.site_policy,
                    dmarc=facts.dmarc,
                )
            elif sub == "owner":
                outcome = self._to_owners(snap, target.recipient)
            else:
                # -bounces is stored; commands are handled in _persist; both are removed
                # from the transaction, so nothing addressed to them is delivered or loops.
                outcome = ListOutcome(found.list_id, target.recipient, Decision.discard)
            outcomes.append(outcome)
        list_rcpts = {t.recipient for t in targets} | set(repeats)
        others = [r for r in envelope.recipients if r not in list_rcpts]
        refused = [o for o in outcomes if o.decision is Decision.reject]
        if len(refused) == len(outcomes) and not others:
            # Every recipient is refused: one 5xx tells the sender, nothing is written.
            assert refused[0].reply is not None
            return Reject(refused[0].reply, tuple(outcomes)), []
        # One copy for all, fanned out by the MTA -- unless the members get their own
        # copies (one-click links, personalized footers) or the list is anonymous: then
        # the outbox.
        in_place = (
            may_edit
            and len(targets) == 1
            and not others
            and len(outcomes[0].recipients) <= self.expand_in_place_max
            and not (
                targets[0].found.address.subaddress == ""
                and delivery.not_in_place(
                    snapshots[0].mlist, snapshots[0].listinfo_url, self.secret_key
                )
            )
        )
        counted: list[int] = []
        # The ORM session that stores holds, notices and outbox copies is opened only when
        # something is stored: the usual post (accepted in place) writes nothing here.
        opened: list[Session] = []

        def open_session() -> Session:
            if not opened:
                opened.append(Session(bind=conn))
            return opened[0]

        try:
            done = [
                self._persist(
                    conn,
                    open_session,
                    envelope,
                    post,
                    identity,
                    facts,
                    o,
                    t,
                    snap,
                    counted,
                    in_place,
                )
                for o, t, snap in zip(outcomes, targets, snapshots, strict=True)
            ]
            for s in opened:
                s.flush()
        finally:
            for s in opened:
                s.close()
        return self._combine(envelope, done, others, repeats, in_place), counted

    def _staff(self, snap: ListSnapshot) -> tuple[str, ...]:
        """Owners and moderators; the site owner when a list has neither (as in Mailman)."""
        return snap.staff or ((self.site_owner,) if self.site_owner else ())

    def _to_owners(self, snap: ListSnapshot, recipient: str) -> ListOutcome:
        return ListOutcome(
            snap.mlist.list_id, recipient, Decision.accept, recipients=self._staff(snap)
        )

    def _persist(
        self,
        conn: Connection,
        open_session: Callable[[], Session],
        envelope: Envelope,
        post: Post,
        identity: SenderIdentity,
        facts: _Facts,
        outcome: ListOutcome,
        target: _Target,
        snap: ListSnapshot,
        counted: list[int],
        in_place: bool,
    ) -> ListOutcome:
        """Store what must be stored before the 250: the held post and its notices, the
        list's own copy when it cannot be made in place, the bounce, the post count."""
        pk = target.found.pk
        mlist = snap.mlist
        sub = target.found.address.subaddress
        if outcome.decision is Decision.hold:
            held = HeldMessage(
                mailing_list_id=pk,
                message_id=post.message_id,
                sender=post.from_address,
                subject=post.subject,
                reasons=[[r.rule, r.text] for r in outcome.reasons],
                envelope={
                    **envelope.as_record(),
                    # what the release needs: DMARC mitigation and the ARC set's results
                    "dmarc_strict": facts.dmarc is not None and facts.dmarc.strict,
                    "auth_results": facts.results,
                },
                raw=post.raw,
                sender_signals=list(identity.signals),
            )
            open_session().add(held)
            open_session().flush()
            self._hold_notices(open_session(), snap, held, identity, outcome)
            return replace(outcome, held_id=held.id)
        if outcome.decision is Decision.reject:
            # Refused while other recipients still get the post (so the SMTP reply is 250):
            # tell the sender by mail, but only an authenticated one, else it is backscatter.
            if identity.authenticated and may_respond(
                open_session(), pk, identity.address, "rejected", self.max_autoresponses_per_day
            ):
                assert outcome.reply is not None
                deliver.enqueue(
                    open_session(),
                    mlist.bounces_address,
                    [identity.address],
                    notices.poster_rejected_notice(
                        mlist, identity.address, post.subject, outcome.reply.text, post.raw
                    ),
                    kind="notice",
                    mailing_list_id=pk,
                )
            return outcome
        kind = {"owner": "owner", "": "postings"}.get(sub)
        if (
            kind is not None
            and outcome.decision is Decision.accept
            and getattr(mlist, f"autorespond_{kind}") is not ResponseAction.none
        ):
            # autorespond_owner / autorespond_postings: answer, and with
            # respond_and_discard the message goes no further
            per_day = self.command_policy.replies_per_day
            if replies.autorespond(open_session(), mlist, kind, post, envelope, per_day):
                return replace(outcome, decision=Decision.discard, recipients=())
        if sub in commands.SUBADDRESSES:
            dispatch.handle(
                open_session(),
                pk,
                sub,
                target.found.address.extension,
                post,
                envelope,
                identity,
                self.command_policy,
            )
            return outcome
        if sub == "bounces":
            open_session().add(
                BounceEvent(
                    mailing_list_id=pk,
                    email=addresses.strip_brackets(target.recipient).lower(),
                    message_id=post.message_id,
                    raw=post.raw,
                )
            )
            return outcome
        if outcome.filter_action is not None and outcome.decision is Decision.discard:
            why = outcome.reasons[-1].text if outcome.reasons else ""
            delivery.dispose_filtered(
                open_session(), mlist, outcome.filter_action, post, why, self._staff(snap)
            )
            return outcome
        if outcome.decision is not Decision.accept:
            return outcome
        number = mlist.post_id
        if sub == "":
            if "%d" in mlist.subject_prefix:
                # the members see the number: exact, at once
                number = count_now(open_session(), pk)
            else:
                counted.append(pk)  # batched, once the transaction has committed
        if not outcome.recipients:
            return outcome
        personalize = None
        copy = post.raw  # -owner mail goes as it came (Mailman's owner pipeline)
        if sub == "":
            # Members' own copies are made (and signed) by the outbox worker, from the
            # archive copy; the shared copy is made and signed here.
            personal = not in_place and delivery.own_copies(
                mlist, snap.listinfo_url, self.secret_key
            )
            ctx = delivery.snapshot_context(
                snap,
                number,
                should_mitigate=service.should_mitigate(mlist, facts.dmarc, post.from_address),
                # In place, the copy is sealed here; through the outbox, the worker seals
                # each copy as it leaves (a member's own copy is made only then).
                sign=self.mailauth.signer(conn, lambda: facts.results)
                if in_place
                else delivery.no_signer,
            )
            if in_place:
                ops, body = delivery.in_place_copy(ctx, post)
                return replace(outcome, header_ops=ops, new_body=body)
            if personal:
                copy = transforms.archive_copy(ctx, post.raw)
                personalize = delivery.own_copy_record(ctx)
            else:
                copy = delivery.members_copy(ctx, post.raw)
        elif in_place:  # -owner mail: Postfix only swaps the recipients
            return outcome
        # This list's own copy, through the outbox (the other recipients keep the original).
        row = deliver.enqueue(
            open_session(),
            mlist.bounces_address,
            list(outcome.recipients),
            copy,
            kind="post",
            mailing_list_id=pk,
            personalize=personalize,
            seal=SealInfo(mlist.mail_host, facts.results) if sub == "" else None,
        )
        return replace(outcome, outbox_id=row.id)

    def _hold_notices(
        self,
        session: Session,
        snap: ListSnapshot,
        held: HeldMessage,
        identity: SenderIdentity,
        outcome: ListOutcome,
    ) -> None:
        mlist = snap.mlist
        if mlist.admin_immed_notify:
            staff = self._staff(snap)
            if staff:
                # The moderators may answer the notice: its Reply-To carries their token.
                life = self.command_policy.workflow.moderator_life
                token = held_ops.token_for(session, held, life)
                deliver.enqueue(
                    session,
                    mlist.owner_address,
                    list(staff),
                    notices.moderator_hold_notice(
                        mlist,
                        held.id,
                        held.sender,
                        held.subject,
                        outcome.reasons,
                        held.raw,
                        token=token,
                        session=session,
                    ),
                    kind="notice",
                    mailing_list_id=mlist.id,
                )
        if (
            mlist.respond_to_post_requests
            and identity.authenticated
            and may_respond(
                session, mlist.id, identity.address, "hold", self.max_autoresponses_per_day
            )
        ):
            deliver.enqueue(
                session,
                mlist.bounces_address,
                [identity.address],
                notices.poster_hold_notice(
                    mlist,
                    identity.address,
                    held.subject,
                    outcome.reasons,
                    language=language_of(session, mlist, identity.address),
                    session=session,
                ),
                kind="notice",
                mailing_list_id=mlist.id,
            )

    @staticmethod
    def _combine(
        envelope: Envelope,
        outcomes: list[ListOutcome],
        others: list[str],
        repeats: Sequence[str],
        in_place: bool,
    ) -> Verdict:
        """The transaction's verdict.  One list and nothing else: the list recipient is
        replaced by the members in place and Postfix fans the post out.  Otherwise each
        list's copy went to the outbox above, the list recipients are removed, and the
        other recipients get the original untouched."""
        deleted = (*(o.recipient for o in outcomes), *repeats)
        if in_place:
            (outcome,) = outcomes
            if outcome.decision is not Decision.accept or not outcome.recipients:
                return Discard(tuple(outcomes))
            return Accept(
                Edits(
                    header_ops=outcome.header_ops,
                    body=outcome.new_body,
                    del_recipients=deleted,
                    add_recipients=tuple(dict.fromkeys(outcome.recipients)),
                ),
                tuple(outcomes),
            )
        if not others:
            return Discard(tuple(outcomes))
        return Accept(Edits(del_recipients=deleted), tuple(outcomes))
