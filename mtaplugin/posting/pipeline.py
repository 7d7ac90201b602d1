"""``process()``: one list's decision on one post, a pure function of its inputs.

The rules run in the order of ``POSTING_RULES`` (the documented order, Mailman's
default-posting-chain with mtaplugin's additions).  The first rule whose action is not
``defer`` decides: accept, hold, reject or discard.  A rule that hits with ``defer`` only
records its reason; when no rule decides and any reason was recorded, the post is held
(Mailman's final ``any`` link).  Otherwise it is accepted.  The reasons of every rule that
hit are kept for the moderator.

An accepted post then meets content filtering (lists with ``filter_content``): a post
that would leave nothing for the members gets the list's ``filter_action``, decided here,
before the SMTP reply -- ``reject`` is a 5xx naming rule ``content-filter``.

A reject becomes ``550 5.7.1`` at end of DATA with a text that names the list, the rule
and what to do; a list can word its own texts per rule (``refusal_texts``).
"""

from __future__ import annotations

from collections.abc import Mapping

from mtaplugin.copies import delivery
from mtaplugin.copies.transforms import content_filter
from mtaplugin.i18n import _
from mtaplugin.lists import roster
from mtaplugin.lists.snapshot import ListSnapshot
from mtaplugin.mailauth.dmarc import DmarcPolicy
from mtaplugin.mailauth.identity import SenderIdentity
from mtaplugin.model.enums import Action, FilterAction
from mtaplugin.posting.envelope import Envelope, Post
from mtaplugin.posting.rules.administrivia import administrivia
from mtaplugin.posting.rules.approved import approved
from mtaplugin.posting.rules.authentication import unauthenticated_sender
from mtaplugin.posting.rules.bans import banned_address
from mtaplugin.posting.rules.base import Hit, PostContext, Rule, SitePolicy
from mtaplugin.posting.rules.destination import implicit_destination, max_recipients
from mtaplugin.posting.rules.dmarc import dmarc_mitigation
from mtaplugin.posting.rules.emergency import emergency
from mtaplugin.posting.rules.headers import header_match, suspicious_header
from mtaplugin.posting.rules.loop import loop
from mtaplugin.posting.rules.moderation import member_moderation, nonmember_moderation
from mtaplugin.posting.rules.senders import no_senders
from mtaplugin.posting.rules.size import max_size, no_subject
from mtaplugin.posting.verdict import Decision, ListOutcome, Reason, permanent

#: The posting rules, in the order they run.  Keep this table readable by a list admin;
#: README.md lists it with what each rule does.
POSTING_RULES: tuple[Rule, ...] = (
    no_senders,  # reject: no From: address
    dmarc_mitigation,  # reject/discard: the From: domain publishes p=reject/quarantine
    loop,  # discard: our own List-Post came back
    approved,  # accept: pre-approved by an authenticated moderator (or the password)
    banned_address,  # reject
    header_match,  # site header checks, then the list's header matches: their action
    emergency,  # hold
    unauthenticated_sender,  # hold, on lists that require authenticated senders
    member_moderation,  # the member's action, or default_member_action
    nonmember_moderation,  # the nonmember's action, legacy lists, default_nonmember_action
    administrivia,  # the rest record a reason; any reason holds the post
    implicit_destination,
    max_recipients,
    max_size,
    no_subject,
    suspicious_header,
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


def _default_texts() -> dict[str, str]:
    return {
        "nonmember-moderation": _("Posts to {list} from nonmembers are not accepted; {subscribe}"),
        "member-moderation": _(
            "Posts to {list} from {sender} are not accepted; write to {owner} about it"
        ),
        "banned-address": _("{sender} may not post to {list}"),
        "no-senders": _("Posts to {list} need a From: address"),
    }


class _Keep(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def refusal_text(snapshot: ListSnapshot, hit: Hit, sender: str) -> str:
    """The one-line SMTP text for a rejected post."""
    mlist = snapshot.mlist
    subscribe = (
        _("subscribe at {url}").format(url=snapshot.listinfo_url)
        if snapshot.listinfo_url
        else _("to subscribe, write to {owner}").format(owner=mlist.owner_address)
    )
    custom: Mapping[str, str] = mlist.refusal_texts or {}
    template = (
        custom.get(hit.rule)
        or custom.get("*")
        or _default_texts().get(hit.rule)
        or _("{list}: post refused by rule {rule}: {reason}")
    )
    values = _Keep(
        list=mlist.fqdn_listname,
        rule=hit.rule,
        reason=hit.reason,
        sender=sender or _("(no From: address)"),
        owner=mlist.owner_address,
        subscribe=subscribe,
        listinfo=snapshot.listinfo_url or mlist.owner_address,
    )
    try:
        text = template.format_map(values)
    except (ValueError, IndexError, AttributeError):  # a broken custom template
        text = _("{list}: post refused by rule {rule}: {reason}").format_map(values)
    text = " ".join(text.split())
    # Name the rule even when the list's own wording does not.
    return text if hit.rule in text else f"{text} (rule {hit.rule})"


def process(
    snapshot: ListSnapshot,
    envelope: Envelope,
    post: Post,
    recipient: str,
    identity: SenderIdentity | None = None,
    site: SitePolicy | None = None,
    dmarc: DmarcPolicy | None = None,
) -> ListOutcome:
    """Decide what the list does with ``post`` sent to ``recipient``.

    No I/O: everything the rules read is in the snapshot, the envelope, the post, the
    sender's identity and the site policy."""
    mlist = snapshot.mlist
    sender = post.from_address
    ctx = PostContext(
        mlist=mlist,
        post=post,
        envelope=envelope,
        sender=sender,
        roles=dict(snapshot.roles_of(sender)) if sender else {},
        identity=identity or SenderIdentity(sender),
        snapshot=snapshot,
        site=site or SitePolicy(),
        recipient=recipient,
        dmarc=dmarc,
    )
    deciding, hits = run_rules(ctx)
    reasons = tuple(Reason(h.rule, h.reason) for h in hits)
    if deciding is None:
        decision = Decision.hold if hits else Decision.accept
    else:
        decision = _DECISIONS[deciding.action]
    if decision is Decision.reject:
        assert deciding is not None
        return ListOutcome(
            mlist.list_id,
            recipient,
            decision,
            reasons,
            reply=permanent("5.7.1", refusal_text(snapshot, deciding, sender)),
        )
    if decision is not Decision.accept:
        return ListOutcome(mlist.list_id, recipient, decision, reasons)
    why = content_filter.screen(mlist, post.raw)
    if why is not None:
        return filtered_out(snapshot, recipient, reasons, why, sender)
    return ListOutcome(
        mlist.list_id,
        recipient,
        decision,
        reasons,
        recipients=roster.delivery_emails(snapshot.regular, sender),
        strip_headers=delivery.headers_to_remove(post),
    )


def filtered_out(
    snapshot: ListSnapshot,
    recipient: str,
    reasons: tuple[Reason, ...],
    why: str,
    sender: str,
) -> ListOutcome:
    """Content filtering left nothing for the members: the list's ``filter_action``.
    ``forward`` and ``preserve`` are discards for the members; the engine forwards the post
    to the owners or keeps it."""
    mlist = snapshot.mlist
    action = mlist.filter_action
    reasons = (*reasons, Reason(content_filter.RULE, why))
    if action is FilterAction.reject:
        hit = Hit(content_filter.RULE, Action.reject, why)
        return ListOutcome(
            mlist.list_id,
            recipient,
            Decision.reject,
            reasons,
            reply=permanent("5.7.1", refusal_text(snapshot, hit, sender)),
            filter_action=action,
        )
    return ListOutcome(mlist.list_id, recipient, Decision.discard, reasons, filter_action=action)
