"""urgent: Mailman 2.1's ``Urgent:`` header.

A post whose ``Urgent:`` header carries the list's ``moderator_password``, or that comes
from an owner or moderator whose From: is authenticated (any value then, e.g.
``Urgent: yes``), goes at once to every member -- digest members and members whose
delivery is off included, as Mailman 2.1 does (its CalcRecips handler); topics do not
narrow it either.  The post still meets the other rules (moderation, size ...): the
header chooses the recipients, it does not approve.

The password is checked in the first non-empty ``Urgent:`` value only, at most once per
post (:mod:`mtaplugin.posting.moderator_password`), and the rule runs after the cheap
refusals (bans, header matches, the rate limits), as ``moderator-password`` does.

A post with an ``Urgent:`` header that is neither is held with a reason (Mailman 2.1
rejects it: "better that the sender know they screwed up than to deliver it normally";
a hold lets a moderator decide instead of losing it).  An empty header is no header.

The header never reaches the members: :mod:`mtaplugin.copies.transforms.cleanse`
removes it from every copy.
"""

from __future__ import annotations

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting import moderator_password as password
from mtaplugin.posting.rules.base import Hit, PostContext

URGENT = "urgent"
HEADER = "Urgent"


def urgent_value(ctx: PostContext) -> str:
    """The first non-empty ``Urgent:`` value ("" when there is none)."""
    if not ctx.post.get_all(HEADER):
        return ""  # (the usual post: no field of that name, none of the fields read again)
    return password.first_value(ctx.post.headers.raw_items(), (HEADER,))


def granted(ctx: PostContext) -> bool:
    """The post is urgent: it goes to every member at once."""
    if ctx.urgent_granted is None:
        ctx.urgent_granted = _granted(ctx)
    return ctx.urgent_granted


def _granted(ctx: PostContext) -> bool:
    value = urgent_value(ctx)
    if not value:
        return False
    if ctx.is_staff and ctx.identity.authenticated:
        return True
    mlist = ctx.mlist
    return password.matches(ctx.post.raw, value, mlist.moderator_password, mlist.fqdn_listname)


def urgent(ctx: PostContext) -> Hit | None:
    """an ``Urgent:`` header that neither carries the list's ``moderator_password`` nor comes
    from an owner or moderator whose From: is authenticated (a right one sends the post at
    once to every member; it does not approve: the later rules still run)."""
    if not urgent_value(ctx) or granted(ctx):
        return None
    return Hit(
        URGENT,
        Action.hold,
        _(
            "Urgent: without the list's moderator password, from {sender}, who is not an "
            "authenticated owner or moderator"
        ).format(sender=ctx.sender or _("(no From: address)")),
    )
