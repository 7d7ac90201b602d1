"""urgent: Mailman 2.1's ``Urgent:`` header.

A post whose ``Urgent:`` header carries the list's ``moderator_password``, or that comes
from an owner or moderator whose From: is authenticated (any value then, e.g.
``Urgent: yes``), goes at once to every member -- digest members and members whose
delivery is off included, as Mailman 2.1 does (its CalcRecips handler); topics do not
narrow it either.  The post still meets the other rules (moderation, size ...): the
header chooses the recipients, it does not approve.

A post with an ``Urgent:`` header that is neither is held with a reason (Mailman 2.1
rejects it: "better that the sender know they screwed up than to deliver it normally";
a hold lets a moderator decide instead of losing it).  An empty header is no header.

The header never reaches the members: :mod:`mtaplugin.copies.transforms.cleanse`
removes it from every copy.
"""

from __future__ import annotations

from mtaplugin import passwords
from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Hit, PostContext

URGENT = "urgent"
HEADER = "Urgent"


def urgent_values(ctx: PostContext) -> list[str]:
    return [v.strip() for v in ctx.post.get_all(HEADER) if v.strip()]


def granted(ctx: PostContext) -> bool:
    """The post is urgent: it goes to every member at once."""
    if ctx.urgent_granted is None:
        ctx.urgent_granted = _granted(ctx)
    return ctx.urgent_granted


def _granted(ctx: PostContext) -> bool:
    values = urgent_values(ctx)
    if not values:
        return False
    if ctx.is_staff and ctx.identity.authenticated:
        return True
    hashed = ctx.mlist.moderator_password
    return any(passwords.verify(value, hashed) for value in values)


def urgent(ctx: PostContext) -> Hit | None:
    """an ``Urgent:`` header that neither carries the list's ``moderator_password`` nor comes
    from an owner or moderator whose From: is authenticated (a right one sends the post at
    once to every member; it does not approve: the later rules still run)."""
    if not urgent_values(ctx) or granted(ctx):
        return None
    return Hit(
        URGENT,
        Action.hold,
        _(
            "Urgent: without the list's moderator password, from {sender}, who is not an "
            "authenticated owner or moderator"
        ).format(sender=ctx.sender or _("(no From: address)")),
    )
