"""Deciding: what the engine learnt about the post (:class:`Facts`), each list's outcome
(the pure :func:`mtaplugin.posting.pipeline.process` for the posting address), and the
transaction's :data:`~mtaplugin.posting.verdict.Verdict` from the lists' outcomes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from mtaplugin.engine import rates
from mtaplugin.engine.recipients import Target
from mtaplugin.mailauth.dmarc import DmarcPolicy
from mtaplugin.mailauth.identity import SenderIdentity
from mtaplugin.posting import pipeline
from mtaplugin.posting.rules.base import RecentPosts, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.verdict import (
    Accept,
    Accepted,
    Discard,
    Dropped,
    Edits,
    ListOutcome,
    Stored,
    Verdict,
)
from mtaplugin.vocabulary.addresses import Subaddress
from mtaplugin.vocabulary.draft import HeaderOp
from mtaplugin.vocabulary.envelope import Envelope, Post


class Facts:
    """What the engine learnt about the post before the rules ran."""

    def __init__(
        self,
        dmarc: DmarcPolicy | None,
        results: Callable[[], str],
        recent: Mapping[str, int] | None = None,
        member_of: frozenset[str] = frozenset(),
    ) -> None:
        #: the From: domain's DMARC policy (looked up only when a list addressed mitigates)
        self.dmarc = dmarc
        self._results = results
        #: posts counted in the last hour by rate key (None: no rate limit is on)
        self.recent = recent
        #: the lists named by ``@list`` entries that the post's From: is a member of
        self.member_of = member_of

    @cached_property
    def results(self) -> str:
        """The incoming authentication results, as the ARC set records them ("" if none);
        made only when something records them (a seal, a hold, an outbox copy): the usual
        post to a list without a DKIM key never needs them."""
        return self._results()


def staff(snap: ListSnapshot, site_owner: str) -> tuple[str, ...]:
    """Owners and moderators; the site owner when a list has neither (as in Mailman)."""
    return snap.staff or ((site_owner,) if site_owner else ())


def outcome_for(
    target: Target,
    snap: ListSnapshot,
    envelope: Envelope,
    post: Post,
    identity: SenderIdentity,
    facts: Facts,
    site: SitePolicy,
    site_owner: str,
) -> ListOutcome:
    """One list's outcome, by the sub-address the post was sent to."""
    match target.subaddress:
        case Subaddress.posting:
            recent = None
            if facts.recent is not None:
                recent = RecentPosts(
                    sender=facts.recent.get(rates.sender_key(post.from_address), 0),
                    list=facts.recent.get(rates.list_key(snap.mlist.list_id), 0),
                )
            return pipeline.process(
                snap,
                envelope,
                post,
                target.recipient,
                identity,
                site,
                dmarc=facts.dmarc,
                recent=recent,
                member_of=facts.member_of,
            )
        case Subaddress.owner:
            return Accepted(snap.mlist.list_id, target.recipient, members=staff(snap, site_owner))
        case _:
            # -bounces (mtaplugin.bounces.inbound) and commands are decided when
            # persisting; both are removed from the transaction, so nothing addressed to
            # them is delivered or loops.
            return Dropped(target.found.list_id, target.recipient)


@dataclass(frozen=True)
class InPlaceCopy:
    """The members' copy as milter edits of the original (in-place delivery): header and
    body edits, and the envelope sender every copy leaves with (the list's -bounces
    address: the members' bounces come back to the list, never to the poster)."""

    header_ops: tuple[HeaderOp, ...]
    body: bytes | None
    mail_from: str


@dataclass(frozen=True)
class Done:
    """One list's outcome after its side effects, and what they stored or made."""

    outcome: ListOutcome
    held_id: int | None = None
    outbox_id: int | None = None
    copy: InPlaceCopy | None = None


def combine(
    done: Sequence[Done], others: Sequence[str], repeats: Sequence[str], in_place: bool
) -> Verdict:
    """The transaction's verdict.  One list and nothing else: the list recipient is
    replaced by the members in place and Postfix fans the post out.  Otherwise each
    list's copy went to the outbox, the list recipients are removed, and the other
    recipients get the original untouched (envelope sender included: only an in-place
    copy, which has no other recipients, changes it)."""
    outcomes = tuple([d.outcome for d in done])
    held: dict[str, int] = {}
    outbox: dict[str, int] = {}
    for d in done:  # (one loop: nearly always one list, and nothing stored)
        if d.held_id is not None:
            held[d.outcome.recipient] = d.held_id
        if d.outbox_id is not None:
            outbox[d.outcome.recipient] = d.outbox_id
    stored = Stored(held=held, outbox=outbox)
    deleted = (*[o.recipient for o in outcomes], *repeats)
    if in_place:
        (one,) = done
        match one.outcome:
            case Accepted(members=members) if members and one.copy is not None:
                edits = Edits(
                    header_ops=one.copy.header_ops,
                    body=one.copy.body,
                    del_recipients=deleted,
                    add_recipients=tuple(dict.fromkeys(members)),
                    mail_from=one.copy.mail_from,
                )
                return Accept(edits, outcomes, stored)
        # Held, dropped, or the copy went through the outbox after all (a VERPed post):
        # the list address was the only recipient, so nothing more is delivered.
        return Discard(outcomes, stored)
    if not others:
        return Discard(outcomes, stored)
    return Accept(Edits(del_recipients=deleted), outcomes, stored)
