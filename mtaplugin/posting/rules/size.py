"""max-size and no-subject."""

from __future__ import annotations

from mtaplugin.i18n import _
from mtaplugin.model.enums import Action
from mtaplugin.posting.rules.base import Hit, PostContext

MAX_SIZE = "max-size"
NO_SUBJECT = "no-subject"


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


def no_subject(ctx: PostContext) -> Hit | None:
    if ctx.post.subject.strip():
        return None
    return Hit(NO_SUBJECT, Action.defer, _("the post has no Subject:"))
