"""``process()``: one list's decision on one post, a pure function of its inputs.

The rules run in the order of ``POSTING_RULES``; the first rule whose action is not
``defer`` decides (accept, hold, reject, discard), and the reasons of every rule that hit
are kept for the moderator.  When no rule decides, the post is accepted.
"""

from __future__ import annotations

from mtaplugin.i18n import _
from mtaplugin.message import Envelope, Post
from mtaplugin.model import MailingList
from mtaplugin.model.enums import Action
from mtaplugin.policies.base import Hit, PostContext, Rule
from mtaplugin.policies.loop import loop
from mtaplugin.policies.moderation import member_moderation, nonmember_moderation
from mtaplugin.snapshot import ListSnapshot
from mtaplugin.verdict import Decision, ListOutcome, Reason, permanent

#: The posting rules, in the order they run.  Keep this table readable by a list admin.
POSTING_RULES: tuple[Rule, ...] = (
    loop,
    member_moderation,
    nonmember_moderation,
)

_DECISIONS = {
    Action.accept: Decision.accept,
    Action.hold: Decision.hold,
    Action.reject: Decision.reject,
    Action.discard: Decision.discard,
}


def run_rules(
    ctx: PostContext, rules: tuple[Rule, ...] = POSTING_RULES
) -> tuple[Hit | None, list[Hit]]:
    """(the deciding hit or None, every hit)."""
    hits: list[Hit] = []
    for rule in rules:
        hit = rule(ctx)
        if hit is None:
            continue
        hits.append(hit)
        if hit.action is not Action.defer:
            return hit, hits
    return None, hits


def reject_reply(mlist: MailingList, hit: Hit) -> str:
    return _("<{list}>: post refused by rule {rule}: {reason}").format(
        list=mlist.fqdn_listname, rule=hit.rule, reason=hit.reason
    )


def process(
    snapshot: ListSnapshot,
    envelope: Envelope,
    post: Post,
    recipient: str,
) -> ListOutcome:
    """Decide what the list does with ``post`` sent to ``recipient``.

    No I/O: everything the rules read is in the snapshot, the envelope and the post."""
    mlist = snapshot.mlist
    sender = post.from_address
    ctx = PostContext(
        mlist=mlist,
        post=post,
        envelope=envelope,
        sender=sender,
        roles=dict(snapshot.roles_of(sender)) if sender else {},
    )
    deciding, hits = run_rules(ctx)
    reasons = tuple(Reason(h.rule, h.reason) for h in hits)
    decision = Decision.accept if deciding is None else _DECISIONS[deciding.action]
    if decision is Decision.reject:
        assert deciding is not None
        return ListOutcome(
            mlist.list_id,
            recipient,
            decision,
            reasons,
            reply=permanent("5.7.1", reject_reply(mlist, deciding)),
        )
    if decision is not Decision.accept:
        return ListOutcome(mlist.list_id, recipient, decision, reasons)
    to = tuple(m.email for m in snapshot.regular if m.receive_own_postings or m.email != sender)
    return ListOutcome(mlist.list_id, recipient, decision, reasons, recipients=to)
