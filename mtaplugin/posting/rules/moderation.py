"""member-moderation and nonmember-moderation.

Membership is decided from the From: address only.  Mailman also accepts the envelope
sender, Reply-To: and Sender:, so a nonmember can post by adding ``Reply-To: <member>``;
mtaplugin does not.

Owners and moderators are not moderated (as in Mailman, where neither rule matches them).
"""

from __future__ import annotations

from mtaplugin.enums import Action, MemberRole
from mtaplugin.i18n import _
from mtaplugin.posting import atlists
from mtaplugin.posting.rules.base import SUBSCRIBED, Hit, PostContext
from mtaplugin.vocabulary import addresses

MEMBER_MODERATION = "member-moderation"
NONMEMBER_MODERATION = "nonmember-moderation"


def member_moderation(ctx: PostContext) -> Hit | None:
    """the From: is a member: their ``moderation_action``, else the list's
    ``default_member_action`` (``defer``: no decision)."""
    if MemberRole.member not in ctx.roles:
        return None
    action = ctx.roles[MemberRole.member] or ctx.mlist.default_member_action
    if action is Action.defer:
        return None
    return Hit(
        MEMBER_MODERATION, action, _("{sender} is a moderated member").format(sender=ctx.sender)
    )


def nonmember_moderation(ctx: PostContext) -> Hit | None:
    """the From: is not a member, owner or moderator: the nonmember's ``moderation_action``,
    then ``accept_these_nonmembers`` (go on), ``hold_``/``reject_``/``discard_these_nonmembers``,
    then ``default_nonmember_action``.  A line of those four is an address, a ``^regex``
    or ``@list@domain``: the members of that list (:mod:`mtaplugin.posting.atlists`)."""
    roles = ctx.roles
    if not SUBSCRIBED.isdisjoint(roles):
        return None
    reason = _("{sender} is not a member of {list}").format(
        sender=ctx.sender or _("(no From: address)"), list=ctx.mlist.fqdn_listname
    )
    explicit = roles.get(MemberRole.nonmember)
    if explicit is not None:
        action = explicit
    else:
        mlist = ctx.mlist
        # Mailman's legacy lists; an accept match means "go on with the other rules".
        legacy = (
            (mlist.accept_these_nonmembers, Action.defer),
            (mlist.hold_these_nonmembers, Action.hold),
            (mlist.reject_these_nonmembers, Action.reject),
            (mlist.discard_these_nonmembers, Action.discard),
        )
        action = next(
            (
                act
                for patterns, act in legacy
                if addresses.listed(ctx.sender, patterns)
                or atlists.matches(patterns, mlist.mail_host, ctx.member_of)
            ),
            mlist.default_nonmember_action,
        )
    if action is Action.defer:
        return None
    return Hit(NONMEMBER_MODERATION, action, reason)
