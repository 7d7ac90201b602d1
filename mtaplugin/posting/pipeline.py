"""``process()``: one list's decision on one post, a pure function of its inputs.

The rules run in the order of the table ``POSTING_RULES`` (the documented order, Mailman's
default-posting-chain with mtaplugin's additions); each line names the rule's id, its
action and its check.  The first rule whose action is not ``defer`` decides: accept, hold,
reject or discard.  A rule that hits with ``defer`` only
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
from typing import TYPE_CHECKING

from mtaplugin.enums import Action, FilterAction
from mtaplugin.i18n import _
from mtaplugin.mailauth.identity import SenderIdentity
from mtaplugin.posting import chain, content_filter
from mtaplugin.posting.audience import audience
from mtaplugin.posting.rules import administrivia as administrivia_rule
from mtaplugin.posting.rules import approved as approved_rules
from mtaplugin.posting.rules import (
    authentication,
    bans,
    destination,
    headers,
    limits,
    news,
    recipients,
    size,
)
from mtaplugin.posting.rules import dmarc as dmarc_rule
from mtaplugin.posting.rules import emergency as emergency_rule
from mtaplugin.posting.rules import loop as loop_rule
from mtaplugin.posting.rules.administrivia import ADMINISTRIVIA, administrivia
from mtaplugin.posting.rules.approved import (
    APPROVED,
    HEADERS,
    MODERATOR_PASSWORD,
    approved,
    moderator_password,
)
from mtaplugin.posting.rules.authentication import UNAUTHENTICATED_SENDER, unauthenticated_sender
from mtaplugin.posting.rules.bans import BANNED_ADDRESS, banned_address
from mtaplugin.posting.rules.base import Hit, PostContext, RecentPosts, Rule, SitePolicy
from mtaplugin.posting.rules.destination import IMPLICIT_DESTINATION, implicit_destination
from mtaplugin.posting.rules.dmarc import DMARC_MITIGATION, dmarc_mitigation
from mtaplugin.posting.rules.emergency import EMERGENCY, emergency
from mtaplugin.posting.rules.headers import (
    HEADER_MATCH,
    SUSPICIOUS_HEADER,
    header_match,
    suspicious_header,
)
from mtaplugin.posting.rules.limits import (
    LIST_RATE,
    NONMEMBER_LARGE_LIST,
    SENDER_RATE,
    list_rate,
    nonmember_large_list,
    sender_rate,
)
from mtaplugin.posting.rules.loop import LOOP, loop
from mtaplugin.posting.rules.moderation import (
    MEMBER_MODERATION,
    NONMEMBER_MODERATION,
    member_moderation,
    nonmember_moderation,
)
from mtaplugin.posting.rules.news import NEWS_MODERATION, news_moderation
from mtaplugin.posting.rules.recipients import MAX_RECIPIENTS, max_recipients
from mtaplugin.posting.rules.senders import NO_SENDERS, no_senders
from mtaplugin.posting.rules.size import MAX_SIZE, max_size
from mtaplugin.posting.rules.subject import NO_SUBJECT, no_subject
from mtaplugin.posting.rules.urgent import URGENT, granted, urgent
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.verdict import (
    Accepted,
    Deferred,
    Dropped,
    Held,
    ListOutcome,
    Reason,
    Refused,
    permanent,
    temporary,
)
from mtaplugin.vocabulary.envelope import Envelope, Post

if TYPE_CHECKING:
    from mtaplugin.mailauth.dmarc import DmarcPolicy

#: what a rule that refuses only for now does (a 4xx: the sender's MTA tries again)
TRY_LATER = "try again later (4xx)"

#: The posting rules, in the order they run: id, action, check.  An action of None comes
#: from a setting, named in the docs' words.  docs/rules.md lists this table (a test checks it).
POSTING_RULES: tuple[Rule, ...] = (
    Rule(NO_SENDERS, Action.reject, no_senders),
    Rule(DMARC_MITIGATION, None, dmarc_mitigation, "reject or discard", dmarc_rule.prepare),
    Rule(LOOP, Action.discard, loop, prepare=loop_rule.prepare),
    Rule(APPROVED, Action.accept, approved),
    Rule(BANNED_ADDRESS, Action.reject, banned_address, prepare=bans.prepare),
    Rule(HEADER_MATCH, None, header_match, "its action", headers.prepare_header_match),
    Rule(SENDER_RATE, None, sender_rate, TRY_LATER, limits.prepare_sender_rate),
    Rule(LIST_RATE, None, list_rate, TRY_LATER, limits.prepare_list_rate),
    Rule(
        NONMEMBER_LARGE_LIST,
        Action.reject,
        nonmember_large_list,
        prepare=limits.prepare_nonmember_large_list,
    ),
    # The moderator password is hashed only here, after the cheap refusals above, and at
    # most once per post (mtaplugin.posting.moderator_password).
    Rule(URGENT, Action.hold, urgent),
    Rule(
        MODERATOR_PASSWORD,
        Action.accept,
        moderator_password,
        prepare=approved_rules.prepare_moderator_password,
    ),
    Rule(EMERGENCY, Action.hold, emergency, prepare=emergency_rule.prepare),
    Rule(
        UNAUTHENTICATED_SENDER,
        Action.hold,
        unauthenticated_sender,
        prepare=authentication.prepare,
    ),
    Rule(MEMBER_MODERATION, None, member_moderation, "the member's action"),
    Rule(NONMEMBER_MODERATION, None, nonmember_moderation, "the nonmember's action"),
    Rule(NEWS_MODERATION, Action.hold, news_moderation, prepare=news.prepare),
    # The rest record a reason; any reason holds the post.
    Rule(ADMINISTRIVIA, Action.defer, administrivia, prepare=administrivia_rule.prepare),
    Rule(IMPLICIT_DESTINATION, Action.defer, implicit_destination, prepare=destination.prepare),
    Rule(MAX_RECIPIENTS, Action.defer, max_recipients, prepare=recipients.prepare),
    Rule(MAX_SIZE, Action.defer, max_size, prepare=size.prepare),
    Rule(NO_SUBJECT, Action.defer, no_subject),
    Rule(
        SUSPICIOUS_HEADER,
        Action.defer,
        suspicious_header,
        prepare=headers.prepare_suspicious_header,
    ),
)

#: the site policy of a call that gives none (one object, so its compiled chains are kept)
_NO_SITE = SitePolicy()


class RuleMismatch(AssertionError):
    """A rule's hit disagrees with its line in the table (a bug, not a post's fault)."""


def run_rules(
    ctx: PostContext, rules: tuple[Rule, ...] = POSTING_RULES
) -> tuple[Hit | None, list[Hit]]:
    """(the deciding hit or None, every hit)."""
    hits: list[Hit] = []
    for rule in rules:
        hit = rule.check(ctx)
        if hit is None:
            continue
        if hit.rule != rule.id or (rule.action is not None and hit.action is not rule.action):
            raise RuleMismatch(f"{hit!r} does not match the table's {rule.id} {rule.does}")
        hits.append(hit)
        if hit.action is not Action.defer:
            return hit, hits
    return None, hits


def default_refusal_texts() -> dict[str, str]:
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
        or default_refusal_texts().get(hit.rule)
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
    recent: RecentPosts | None = None,
    member_of: frozenset[str] = frozenset(),
) -> ListOutcome:
    """Decide what the list does with ``post`` sent to ``recipient``.

    No I/O: everything the rules read is in the snapshot, the envelope, the post, the
    sender's identity and the site policy; ``member_of`` names the lists the nonmember
    settings' ``@list`` entries name that the sender is a member of."""
    mlist = snapshot.mlist
    sender = post.from_address
    site = site or _NO_SITE
    ctx = PostContext(
        mlist=mlist,
        post=post,
        envelope=envelope,
        sender=sender,
        roles=dict(snapshot.roles_of(sender)) if sender else {},
        identity=identity or SenderIdentity(sender),
        snapshot=snapshot,
        site=site,
        recipient=recipient,
        dmarc=dmarc,
        recent=recent,
        member_of=member_of,
    )
    deciding, hits = run_rules(ctx, chain.compiled(POSTING_RULES, snapshot, site))
    reasons = tuple(Reason(h.rule, h.reason) for h in hits)
    list_id = mlist.list_id
    if deciding is None:
        if hits:
            return Held(list_id, recipient, reasons)
    elif deciding.action is Action.hold:
        return Held(list_id, recipient, reasons)
    elif deciding.action is Action.discard:
        return Dropped(list_id, recipient, reasons)
    elif deciding.action is Action.reject and deciding.temporary:
        later = temporary("4.7.1", refusal_text(snapshot, deciding, sender))
        return Deferred(list_id, recipient, later, reasons)
    elif deciding.action is Action.reject:
        reply = permanent("5.7.1", refusal_text(snapshot, deciding, sender))
        return Refused(list_id, recipient, reply, deciding.rule, reasons)
    why = content_filter.screen(mlist, post.raw)
    if why is not None:
        return filtered_out(snapshot, recipient, reasons, why, sender)
    who = audience(snapshot, post, sender, urgent=granted(ctx))
    return Accepted(
        list_id,
        recipient,
        members=who.members,
        reasons=reasons,
        strip_headers=tuple(h for h in HEADERS if post.get_all(h)),
        topics=who.topics,
        urgent=who.urgent,
    )


def filtered_out(
    snapshot: ListSnapshot,
    recipient: str,
    reasons: tuple[Reason, ...],
    why: str,
    sender: str,
) -> Refused | Dropped:
    """Content filtering left nothing for the members: the list's ``filter_action``.
    ``forward`` and ``preserve`` drop the post for the members; the engine forwards it to
    the owners or keeps it."""
    mlist = snapshot.mlist
    action = mlist.filter_action
    reasons = (*reasons, Reason(content_filter.RULE, why))
    if action is FilterAction.reject:
        hit = Hit(content_filter.RULE, Action.reject, why)
        reply = permanent("5.7.1", refusal_text(snapshot, hit, sender))
        return Refused(mlist.list_id, recipient, reply, content_filter.RULE, reasons)
    return Dropped(mlist.list_id, recipient, reasons, filtered=action)
