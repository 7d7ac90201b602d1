"""Held posts: list, show, approve, reject, discard, defer.

Shared by the CLI (and later REST, the web queue and moderation by reply).  Every action
is written to the audit log with who did it.  An approved post goes to the members through
the outbox, as :func:`mtaplugin.copies.transforms.members_copy` makes it, without running the
moderation rules again; it goes to whom it would have gone had it been accepted now
(:func:`mtaplugin.posting.audience.audience`: urgent, topics, avoided duplicates), and into
the stage of accepted posts as every accepted post does (:mod:`mtaplugin.accepted`).  A
refusal notice goes to the poster only when the From: address was authenticated when the
post came in; otherwise it would be backscatter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbox
from mtaplugin.accepted import journal
from mtaplugin.clock import Clock, system_clock
from mtaplugin.config import ArchiversSettings
from mtaplugin.copies import paths, transforms
from mtaplugin.enums import RequestType, TokenOwner
from mtaplugin.errors import InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.lists import cache, roster
from mtaplugin.lists.counters import count_now
from mtaplugin.lists.language import language_of
from mtaplugin.mailauth import dmarc
from mtaplugin.mailauth.identity import SenderIdentity
from mtaplugin.mailauth.service import SealInfo
from mtaplugin.manage import lists, pending
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import AuditEntry, HeldMessage, MailingList
from mtaplugin.posting import content_filter
from mtaplugin.posting.audience import Audience, audience
from mtaplugin.posting.rules import urgent
from mtaplugin.posting.rules.base import PostContext
from mtaplugin.posting.verdict import Reason
from mtaplugin.vocabulary.envelope import Envelope, Post

ACTIONS = ("approve", "reject", "discard", "defer")


@dataclass(frozen=True)
class Result:
    held_id: int
    action: str
    #: the outbox row that carries the post (approve) or the notice (reject), if any
    outbox_id: int | None = None
    notified: bool = False


def all_held(session: Session, mlist: MailingList) -> list[HeldMessage]:
    return list(
        session.scalars(
            select(HeldMessage)
            .where(HeldMessage.mailing_list_id == mlist.id)
            .order_by(HeldMessage.hold_date, HeldMessage.id)
        )
    )


def get(session: Session, mlist: MailingList, held_id: int) -> HeldMessage:
    held = session.scalar(
        select(HeldMessage).where(
            HeldMessage.id == held_id, HeldMessage.mailing_list_id == mlist.id
        )
    )
    if held is None:
        raise NotFound(
            "request_id",
            _("no held post {id} on {list}").format(id=held_id, list=mlist.fqdn_listname),
        )
    return held


@dataclass(frozen=True)
class Moderator:
    """Who decides on a list's held posts, and when: what every decision takes (the web,
    REST, the command line, moderation by reply and the scheduler each build one)."""

    session: Session
    mlist: MailingList
    actor: str
    clock: Clock = system_clock
    #: the site's external archivers, whose links a released post's copy shows
    archivers: ArchiversSettings | None = None

    @classmethod
    def of(
        cls, session: Session, mlist: MailingList, actor: str, workflow: WorkflowSettings
    ) -> Moderator:
        """``actor`` deciding with the workflow's clock and the site's archivers."""
        return cls(session, mlist, actor, workflow.clock, workflow.archivers)


@dataclass(frozen=True)
class _Decision:
    """A moderator's decision on one held post and the audit entry it leaves."""

    by: Moderator
    held: HeldMessage

    def record(self, action: str, **extra: str) -> None:
        """``held.<action>`` in the audit log, naming the post (and ``extra``)."""
        held, by = self.held, self.by
        by.session.add(
            AuditEntry(
                actor=by.actor,
                action=f"held.{action}",
                mailing_list_id=by.mlist.id,
                at=by.clock(),
                detail={
                    "request_id": held.id,
                    "message_id": held.message_id,
                    "sender": held.sender,
                    "subject": held.subject,
                    **extra,
                },
            )
        )

    def settle(self, action: str, **extra: str) -> None:
        """The post leaves the queue: :meth:`record`, and the held row goes."""
        self.record(action, **extra)
        self.by.session.delete(self.held)
        self.by.session.flush()


def _decide(by: Moderator, held_id: int) -> _Decision:
    return _Decision(by, get(by.session, by.mlist, held_id))


def release_audience(session: Session, mlist: MailingList, held: HeldMessage) -> Audience:
    """Who gets a released post: as if it had been accepted now (urgent, topics, avoid
    duplicates), from the sender's roles and the signals stored with the hold."""
    snap = cache.build(session, mlist)
    post = Post(held.raw)
    ctx = PostContext(
        mlist=mlist,
        post=post,
        envelope=Envelope(),
        sender=held.sender,
        roles=dict(snap.roles_of(held.sender)),
        identity=SenderIdentity(held.sender, tuple(held.sender_signals or ())),
        snapshot=snap,
    )
    return audience(snap, post, held.sender, urgent=urgent.granted(ctx))


def approve(by: Moderator, held_id: int) -> Result:
    """Release the post, as if it had been accepted at ``by.clock()``: the members'
    copies through the outbox, and the post entered in the stage of accepted posts
    (:mod:`mtaplugin.accepted`), the one every accepted post takes: the archive, the
    site's external archivers, the digest and the newsgroup get it from there."""
    decision = _decide(by, held_id)
    held = decision.held
    session, mlist, clock = by.session, by.mlist, by.clock
    who = release_audience(session, mlist, held)
    recipients = list(who.members)
    row_id = None
    why = content_filter.screen(mlist, held.raw)
    if why is not None:
        # Content filtering leaves nothing for the members: the list's filter_action
        # (reject and discard: nobody gets it; the moderator sees why in the audit log).
        paths.dispose_filtered(
            session,
            mlist,
            mlist.filter_action,
            Post(held.raw),
            why,
            tuple(lists.staff(session, mlist)),
            clock(),
        )
        decision.settle("approve", filtered=why)
        return Result(held_id, "approve")
    number = count_now(session, mlist.id)
    # What the engine learnt when it held the post: DMARC and the incoming results (and
    # whether it was gated in from the list's newsgroup).
    kept = held.envelope or {}
    journal.enter(
        session,
        mlist,
        Post(held.raw),
        origin=journal.origin_of(str(kept.get("gated_from") or ""), released=True),
        number=number,
        topics=who.topics,
        urgent=who.urgent,
        digest_members=bool(roster.count_digest_recipients(session, mlist.id)),
        now=clock(),
    )
    if recipients:
        mitigate = dmarc.should_mitigate(mlist, bool(kept.get("dmarc_strict")), held.sender)
        ctx = paths.session_context(
            session,
            mlist,
            number,
            should_mitigate=mitigate,
            topics=who.topics,
            archivers=by.archivers,
        )
        # Own copies for a list that may give one-click links (the worker knows whether
        # the site has the secret) or personalizes; else one copy for all.
        personal = bool(ctx.listinfo_url) or paths.own_copies(mlist, "", "")
        row_id = outbox.enqueue(
            session,
            mlist.bounces_address,
            recipients,
            transforms.archive_copy(ctx, held.raw)
            if personal
            else transforms.members_copy(ctx, held.raw),
            kind="release",
            mailing_list_id=mlist.id,
            personalize=paths.own_copy_record(ctx) if personal else None,
            seal=SealInfo(mlist.mail_host, str(kept.get("auth_results", ""))),
            post_number=number,
            now=clock(),
        )
    decision.settle("approve")
    return Result(held_id, "approve", row_id)


def reject(by: Moderator, held_id: int, reason: str = "") -> Result:
    """Refuse the post; the poster is told ``reason`` when their address was
    authenticated (else the notice could be backscatter)."""
    decision = _decide(by, held_id)
    held, session, mlist = decision.held, by.session, by.mlist
    reason = reason.strip() or _("the moderator did not accept it")
    row_id = None
    if held.sender_signals and held.sender:
        poster = notices.Poster(
            mlist, held.sender, held.subject, language_of(session, mlist, held.sender), session
        )
        raw = notices.poster_rejected_notice(poster, reason, held.raw)
        row_id = outbox.list_notice(session, mlist, [held.sender], raw, by.clock())
    decision.settle("reject", reason=reason)
    return Result(held_id, "reject", row_id, notified=row_id is not None)


def discard(by: Moderator, held_id: int, reason: str = "") -> Result:
    """Drop the post; ``reason`` (why, when nobody chose it) goes into the audit entry."""
    why = {"reason": reason} if reason else {}
    _decide(by, held_id).settle("discard", **why)
    return Result(held_id, "discard")


def defer(by: Moderator, held_id: int, note: str = "") -> Result:
    """Leave the post held (Mailman's "defer"); the decision is recorded."""
    _decide(by, held_id).record("defer", note=note)
    return Result(held_id, "defer")


def act(by: Moderator, held_id: int, action: str, reason: str = "") -> Result:
    """The decision ``action`` names (one of :data:`ACTIONS`); ``reason`` goes to a
    rejected poster, or with a deferral into the audit log."""
    if action == "approve":
        return approve(by, held_id)
    if action == "reject":
        return reject(by, held_id, reason)
    if action == "discard":
        return discard(by, held_id)
    if action == "defer":
        return defer(by, held_id, reason)
    raise InvalidInput.not_one_of(
        "action", _("unknown action {value!r}; choose one of: {choices}"), action, ACTIONS
    )


def token_for(
    session: Session,
    held: HeldMessage,
    life: timedelta,
    clock: Clock = system_clock,
    token: str = "",
) -> str:
    """A moderator's token for ``held`` (``list-confirm+TOKEN@`` in the moderators' notice;
    the web can use it too), valid for ``life`` (``[rules] moderator_request_life``); the
    new one, or ``token`` (made with :func:`~mtaplugin.manage.pending.new_token` for a
    notice rendered before anything was written).  It goes with the post: approving,
    rejecting or discarding the post by any means removes it (``ON DELETE CASCADE``)."""
    request = pending.create(
        session,
        RequestType.held_message,
        held.sender,
        step="moderate",
        owner=TokenOwner.moderator,
        life=life,
        now=clock(),
        mailing_list_id=held.mailing_list_id,
        held_message_id=held.id,
        token=token,
    )
    return request.token


def forward(by: Moderator, held_id: int, recipients: list[str]) -> Result:
    """Send a copy of the held post to ``recipients`` (Mailman's ``forward``), attached to
    a short note; the post stays held until it is moderated."""
    decision = _decide(by, held_id)
    held, mlist = decision.held, by.mlist
    raw = notices.build(
        mlist.owner_address,
        ", ".join(recipients),
        _("Forward of a post held on {list}: {subject}").format(
            list=mlist.fqdn_listname, subject=held.subject
        ),
        _("The attached post, from {sender}, is held for moderation on {list}.\n").format(
            sender=held.sender, list=mlist.fqdn_listname
        ),
        attach=held.raw,
    )
    queued = outbox.enqueue(
        by.session,
        mlist.bounces_address,
        recipients,
        raw,
        kind="notice",
        mailing_list_id=mlist.id,
        now=by.clock(),
    )
    decision.record("forward", to=", ".join(recipients))
    return Result(held_id, "forward", queued)


def reasons_of(held: HeldMessage) -> tuple[Reason, ...]:
    return tuple(Reason(str(rule), str(text)) for rule, text in held.reasons)
