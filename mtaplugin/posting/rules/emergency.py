"""emergency: the list owner switched on emergency moderation; every post is held."""

from __future__ import annotations

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot

EMERGENCY = "emergency"


def prepare(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off unless the list is under emergency moderation."""
    return emergency if snapshot.mlist.emergency else None


def emergency(ctx: PostContext) -> Hit | None:
    if not ctx.mlist.emergency:
        return None
    return Hit(
        EMERGENCY,
        Action.hold,
        _("{list} is under emergency moderation").format(list=ctx.mlist.fqdn_listname),
    )
