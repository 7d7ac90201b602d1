"""max-size: a post larger than the list's ``max_message_size`` (KiB) records a reason."""

from __future__ import annotations

from functools import partial

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot

MAX_SIZE = "max-size"


def max_size(ctx: PostContext) -> Hit | None:
    limit_kib = ctx.mlist.max_message_size
    return None if limit_kib <= 0 else _over(limit_kib, ctx)


def prepare(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off when the list has no ``max_message_size`` (0)."""
    limit_kib = snapshot.mlist.max_message_size
    return partial(_over, limit_kib) if limit_kib > 0 else None


def _over(limit_kib: int, ctx: PostContext) -> Hit | None:
    if ctx.post.size <= limit_kib * 1024:
        return None
    return Hit(
        MAX_SIZE,
        Action.defer,
        _("the post is {size} KiB; the list takes up to {limit} KiB").format(
            size=(ctx.post.size + 1023) // 1024, limit=limit_kib
        ),
    )
