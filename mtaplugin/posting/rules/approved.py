"""approved: a post a moderator pre-approved goes to the members without moderation.

Two ways, checked in this order:

1. An owner or moderator of the list whose From: address is authenticated (aligned
   DKIM/SPF/DMARC from a trusted verifier, or SMTP AUTH; see :mod:`mtaplugin.mailauth.identity`)
   adds an ``Approved:`` header (any value, e.g. ``Approved: yes``).  No shared secret
   travels in the message.
2. Compatibility with Mailman: when the list has a ``moderator_password``, an
   ``Approved:``/``Approve:``/``X-Approved:``/``X-Approve:`` header carrying that password
   approves the post from anyone.  A wrong password does not approve (nor refuse).

The headers are removed before the members get the post, whatever the outcome.
"""

from __future__ import annotations

from mtaplugin import passwords
from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Hit, PostContext

APPROVED = "approved"
HEADERS = ("Approved", "Approve", "X-Approved", "X-Approve")


def approval_values(ctx: PostContext) -> list[str]:
    return [v.strip() for h in HEADERS for v in ctx.post.get_all(h) if v.strip()]


def approved(ctx: PostContext) -> Hit | None:
    values = approval_values(ctx)
    if not values:
        return None
    if ctx.is_staff and ctx.identity.authenticated:
        return Hit(
            APPROVED,
            Action.accept,
            _("pre-approved by {sender} ({how})").format(
                sender=ctx.sender, how=", ".join(ctx.identity.signals)
            ),
        )
    hashed = ctx.mlist.moderator_password
    if any(passwords.verify(value, hashed) for value in values):
        # an empty or unknown hash verifies nothing: the rule is off
        return Hit(APPROVED, Action.accept, _("approved with the list's password"))
    return None
