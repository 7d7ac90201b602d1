"""max-size: a post larger than the list's ``max_message_size`` (KiB) records a reason."""

from __future__ import annotations

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Hit, PostContext

MAX_SIZE = "max-size"


def max_size(ctx: PostContext) -> Hit | None:
    limit_kib = ctx.mlist.max_message_size
    if limit_kib <= 0 or ctx.post.size <= limit_kib * 1024:
        return None
    return Hit(
        MAX_SIZE,
        Action.defer,
        _("the post is {size} KiB; the list takes up to {limit} KiB").format(
            size=(ctx.post.size + 1023) // 1024, limit=limit_kib
        ),
    )
