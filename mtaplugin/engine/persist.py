"""Storing what must be stored before the 250, one function per side effect: the held post
and its notices, the refusal notice, the autoresponse, the email commands, the bounce, the
filtered post, the post count, the list's own copy (made in place, or in the outbox), and
the accepted post's one journal row (:mod:`mtaplugin.accepted`: the archive, the digest,
the external archivers and the newsgroup take it from there, after the answer).

:func:`persist` dispatches on the sub-address and on the outcome's type, and returns a
:class:`~mtaplugin.engine.decide.Done`: the outcome and what was stored or made for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from mtaplugin import notices, outbox
from mtaplugin.accepted import journal
from mtaplugin.bounces import inbound
from mtaplugin.commands import dispatch, replies
from mtaplugin.copies import paths, transforms
from mtaplugin.engine import nonmembers
from mtaplugin.engine.decide import Done, Facts, InPlaceCopy, staff
from mtaplugin.engine.recipients import Target
from mtaplugin.enums import FilterAction, ResponseAction
from mtaplugin.lists.counters import count_now
from mtaplugin.lists.language import language_of
from mtaplugin.mailauth.dmarc import should_mitigate
from mtaplugin.mailauth.identity import SenderIdentity
from mtaplugin.mailauth.service import SealInfo
from mtaplugin.manage import nonmembers as roster
from mtaplugin.model import HeldMessage
from mtaplugin.notices import may_respond
from mtaplugin.notices.templates import overrides_kept
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.verdict import Accepted, Dropped, Held, ListOutcome, Refused
from mtaplugin.vocabulary import addresses
from mtaplugin.vocabulary.addresses import Subaddress
from mtaplugin.vocabulary.envelope import Envelope, Post

if TYPE_CHECKING:
    from mtaplugin.engine import ListEngine


@dataclass
class Transaction:
    """One end-of-message decision: its connection, the post and what is known about it.
    The ORM session that stores holds, notices and outbox copies is
    opened only when something is stored: the usual post (accepted in place) writes only
    its journal row here, with Core, and nothing when its list neither archives, nor has
    digest members, nor gateways to news (nor a connection then: ``opened()`` begins the
    decision's transaction when first called)."""

    engine: ListEngine
    opened: Callable[[], Connection]
    envelope: Envelope
    post: Post
    identity: SenderIdentity
    facts: Facts
    #: the members' copy replaces the transaction in place (else: the outbox)
    in_place: bool
    #: lists whose post is counted once the transaction has committed
    counted: list[int] = field(default_factory=list)
    _session: Session | None = None

    @property
    def conn(self) -> Connection:
        return self.opened()

    @property
    def session(self) -> Session:
        if self._session is None:
            self._session = Session(bind=self.conn)
        return self._session

    def flush(self) -> None:
        if self._session is not None:
            self._session.flush()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


def persist(tx: Transaction, target: Target, snap: ListSnapshot, outcome: ListOutcome) -> Done:
    """Do one list's side effects: by sub-address (commands, -bounces), then by outcome.
    The notices they send look the list's stored texts up once per list version (kept
    in its snapshot: :func:`~mtaplugin.notices.templates.overrides_kept`)."""
    with overrides_kept(snap.notice_texts):
        return _persist(tx, target, snap, outcome)


def _persist(tx: Transaction, target: Target, snap: ListSnapshot, outcome: ListOutcome) -> Done:
    sub = target.subaddress
    if sub.is_command:
        run_commands(tx, target)
        return Done(outcome)
    if sub is Subaddress.bounces:
        receive_bounce(tx, target, snap)
        return Done(outcome)
    sender = tx.post.from_address  # (on the list's nonmember roster: engine/nonmembers.py)
    if nonmembers.recorded(sender, target, snap, outcome):
        roster.record_nonmember(tx.session, target.found.pk, sender, tx.engine.clock())
    match outcome:
        case Held():
            return Done(outcome, held_id=hold(tx, target, snap, outcome))
        case Refused():
            tell_refused(tx, snap, outcome)
            return Done(outcome)
        case Dropped(filtered=filtered) if filtered is not None:
            dispose_filtered(tx, snap, outcome, filtered)
            return Done(outcome)
        case Accepted():
            answered = autorespond(tx, snap, sub, outcome)
            if answered is not None:
                return Done(answered)
            done = deliver_copy(tx, target, snap, outcome)
            if sub is Subaddress.posting:
                acknowledge(tx, snap)
            return done
    return Done(outcome)


def hold(tx: Transaction, target: Target, snap: ListSnapshot, outcome: Held) -> int:
    """Store the held post; the held post's id.  Its notices (the moderators', the
    poster's) are made by the worker after the answer (:mod:`mtaplugin.manage.hold_notices`):
    the post is stored with ``notices_due`` when the list would send one."""
    post, facts, mlist = tx.post, tx.facts, snap.mlist
    held = HeldMessage(
        mailing_list_id=target.found.pk,
        message_id=post.message_id,
        sender=post.from_address,
        subject=post.subject,
        reasons=[[r.rule, r.text] for r in outcome.reasons],
        envelope={
            **tx.envelope.as_record(),
            # what the release needs: DMARC mitigation and the ARC set's results
            "dmarc_strict": facts.dmarc is not None and facts.dmarc.strict,
            "auth_results": facts.results,
        },
        raw=post.raw,
        sender_signals=list(tx.identity.signals),
        hold_date=tx.engine.clock(),
        notices_due=bool(
            (mlist.admin_immed_notify and staff(snap, tx.engine.site_owner))
            or (mlist.respond_to_post_requests and tx.identity.authenticated)
        ),
    )
    tx.session.add(held)
    tx.session.flush()
    return held.id


def tell_refused(tx: Transaction, snap: ListSnapshot, outcome: Refused) -> None:
    """Refused while other recipients still get the post (so the SMTP reply is 250): tell
    the sender by mail, but only an authenticated one, else it is backscatter."""
    post = tx.post
    _tell_poster(
        tx,
        snap,
        "rejected",
        lambda: notices.poster_rejected_notice(
            _poster(tx, snap, post.subject), outcome.reply.text, post.raw
        ),
    )


def acknowledge(tx: Transaction, snap: ListSnapshot) -> None:
    """``acknowledge_posts``: the member who posted is told the post went out
    (``list:user:notice:post``), through the outbox -- only an authenticated From: (else
    it could be backscatter) and within ``replies.max_autoresponses_per_day``."""
    if tx.identity.address not in snap.acknowledge:
        return
    _tell_poster(
        tx,
        snap,
        "ack",
        lambda: notices.post_acknowledgement(_poster(tx, snap, tx.post.subject)),
    )


def _poster(tx: Transaction, snap: ListSnapshot, subject: str) -> notices.Poster:
    """The poster of ``subject`` (the post's authenticated From:), in their language, their
    notice's template read in the decision's session."""
    address = tx.identity.address
    return notices.Poster(
        snap.mlist, address, subject, language_of(tx.session, snap.mlist, address), tx.session
    )


def _tell_poster(
    tx: Transaction, snap: ListSnapshot, kind: str, notice: Callable[[], bytes]
) -> None:
    """The ``notice()`` to the poster, through the outbox:
    only to an authenticated one (else it could be backscatter), and within
    ``replies.max_autoresponses_per_day`` notices of ``kind`` a day."""
    mlist, identity, session = snap.mlist, tx.identity, tx.session
    if not identity.authenticated or not may_respond(
        session,
        mlist.id,
        identity.address,
        kind,
        tx.engine.max_autoresponses_per_day,
        tx.engine.clock(),
    ):
        return
    outbox.list_notice(session, mlist, [identity.address], notice(), tx.engine.clock())


_AUTORESPOND_KINDS = {Subaddress.owner: "owner", Subaddress.posting: "postings"}


def autorespond(
    tx: Transaction, snap: ListSnapshot, sub: Subaddress, outcome: Accepted
) -> Dropped | None:
    """``autorespond_owner`` / ``autorespond_postings``: answer the poster; with
    ``respond_and_discard`` the post goes no further (the Dropped outcome), else None."""
    mlist = snap.mlist
    kind = _AUTORESPOND_KINDS.get(sub)
    if kind is None or getattr(mlist, f"autorespond_{kind}") is ResponseAction.none:
        return None
    per_day = tx.engine.command_policy.replies_per_day
    now = tx.engine.clock()
    if replies.autorespond(tx.session, mlist, kind, tx.post, tx.envelope, per_day, now):
        return Dropped(outcome.list_id, outcome.recipient, outcome.reasons)
    return None


def run_commands(tx: Transaction, target: Target) -> None:
    dispatch.handle(
        tx.session,
        target.found.pk,
        target.subaddress.value,
        target.found.address.extension,
        tx.post,
        tx.envelope,
        tx.identity,
        tx.engine.command_policy,
        tx.engine.clock(),
    )


def receive_bounce(tx: Transaction, target: Target, snap: ListSnapshot) -> None:
    """A bounce to ``list-bounces[+…]@``: its events, or its forwarding
    (:mod:`mtaplugin.bounces.inbound`)."""
    engine = tx.engine
    inbound.receive(
        tx.session,
        snap,
        target.found.address.extension,
        tx.post.raw,
        engine.clock(),
        engine.site_owner,
        null_sender=not addresses.strip_brackets(tx.envelope.mail_from),
    )


def dispose_filtered(
    tx: Transaction, snap: ListSnapshot, outcome: Dropped, action: FilterAction
) -> None:
    """Content filtering left nothing for the members: the list's ``filter_action``
    (forward to the owners, preserve for the site admin, or discard)."""
    why = outcome.reasons[-1].text if outcome.reasons else ""
    to = staff(snap, tx.engine.site_owner)
    paths.dispose_filtered(tx.session, snap.mlist, action, tx.post, why, to, tx.engine.clock())


def count(tx: Transaction, snap: ListSnapshot) -> int:
    """Count the post; its number.  When the members see it (``%d`` in the subject prefix)
    or every Nth post is VERPed, it is counted at once, exactly; else batched, once the
    transaction has committed."""
    mlist = snap.mlist
    if "%d" in mlist.subject_prefix or tx.engine.verp.needs_exact_number:
        return count_now(tx.session, mlist.id, tx.engine.clock)
    tx.counted.append(mlist.id)
    return mlist.post_id


def deliver_copy(tx: Transaction, target: Target, snap: ListSnapshot, outcome: Accepted) -> Done:
    """The list's copy for its members: made here in place (one copy for all, fanned out
    by the MTA), or stored in the outbox; and the post entered in the stage of accepted
    posts (:mod:`mtaplugin.accepted`: the archive, the external archivers, the digest and
    the newsgroup get it from there, after the answer).  Every copy leaves with the
    list's -bounces address as its envelope sender (VERPed by the outbox when the post is
    VERPed)."""
    engine, post, facts, mlist = tx.engine, tx.post, tx.facts, snap.mlist
    posting = target.subaddress is Subaddress.posting
    number = count(tx, snap) if posting else mlist.post_id
    # In place: one copy, one envelope sender.  A VERPed post needs one sender per member
    # (the milter cannot ask Postfix for XVERP): the outbox sends it.
    in_place = tx.in_place and not (posting and engine.verp.verped(number, own_copies=False))
    ctx = None
    if posting:
        ctx = paths.snapshot_context(
            snap,
            number,
            should_mitigate=should_mitigate(mlist, facts.dmarc, post.from_address),
            topics=outcome.topics,
            archivers=engine.archivers,
            # In place, the copy is sealed here; through the outbox, the worker seals
            # each copy as it leaves (a member's own copy is made only then).
            sign=engine.mailauth.signer(tx.opened, lambda: facts.results)
            if in_place
            else paths.no_signer,
        )

    # Every path (in place, outbox, no regular member at all) enters the stage, in this
    # transaction: one journal row, fanned out by the worker after the answer.  The row
    # is the decision's last write before its commit, after the copy is made and signed:
    # on SQLite the first write takes the database's one write lock, which every other
    # decision and the worker's drain wait for (the copy's decorations and its RSA
    # signatures, made first, would hold it for a millisecond or more).
    def enter_stage() -> None:
        if posting:
            journal.enter(
                tx.opened,
                mlist,
                post,
                origin=journal.origin_of(tx.envelope.gated_from),
                number=number,
                topics=outcome.topics,
                urgent=outcome.urgent,
                digest_members=bool(snap.digest_members),
                now=engine.clock(),
            )

    if not outcome.members:
        enter_stage()
        return Done(outcome)
    personalize = None
    copy = post.raw  # -owner mail goes as it came (Mailman's owner pipeline)
    if ctx is not None:
        # Members' own copies are made (and signed) by the outbox worker, from the
        # archive copy; the shared copy is made and signed here.
        if in_place:
            ops, body = paths.in_place_copy(ctx, post)
            enter_stage()
            return Done(outcome, copy=InPlaceCopy(ops, body, mlist.bounces_address))
        if paths.own_copies(mlist, snap.listinfo_url, engine.secret_key):
            copy = transforms.archive_copy(ctx, post.raw)
            personalize = paths.own_copy_record(ctx)
        else:
            copy = transforms.members_copy(ctx, post.raw)
    elif in_place:  # -owner mail: Postfix swaps the recipients and the envelope sender
        return Done(outcome, copy=InPlaceCopy((), None, mlist.bounces_address))
    enter_stage()
    # This list's own copy, through the outbox (the other recipients keep the original).
    queued = outbox.enqueue(
        tx.session,
        mlist.bounces_address,
        list(outcome.members),
        copy,
        kind="post",
        mailing_list_id=target.found.pk,
        personalize=personalize,
        seal=SealInfo(mlist.mail_host, facts.results) if posting else None,
        # the post's number: the worker VERPs the copies of the posts the site asks for
        post_number=number if posting else None,
        now=tx.engine.clock(),
    )
    return Done(outcome, outbox_id=queued)
