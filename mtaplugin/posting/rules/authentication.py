"""unauthenticated-sender: on a list with ``require_authenticated_senders``, a post whose
From: is a member (or owner or moderator) but is not backed by an aligned DKIM, SPF or
DMARC pass, or SMTP AUTH, is held: anyone can write a member's address in From:."""

from __future__ import annotations

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import SUBSCRIBED, Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot

UNAUTHENTICATED_SENDER = "unauthenticated-sender"


def prepare(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off unless the list has ``require_authenticated_senders``."""
    return unauthenticated_sender if snapshot.mlist.require_authenticated_senders else None


def unauthenticated_sender(ctx: PostContext) -> Hit | None:
    if not ctx.mlist.require_authenticated_senders:
        return None
    if SUBSCRIBED.isdisjoint(ctx.roles):
        return None  # nonmembers meet nonmember-moderation anyway
    if ctx.identity.authenticated:
        return None
    return Hit(
        UNAUTHENTICATED_SENDER,
        Action.hold,
        _(
            "the From: address {sender} is not authenticated (no aligned DKIM, SPF or DMARC "
            "pass, no SMTP AUTH)"
        ).format(sender=ctx.sender),
    )
