"""max-recipients: To: and Cc: name ``max_num_recipients`` addresses or more."""

from __future__ import annotations

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Hit, PostContext
from mtaplugin.posting.rules.destination import named_addresses

MAX_RECIPIENTS = "max-recipients"


def max_recipients(ctx: PostContext) -> Hit | None:
    limit = ctx.mlist.max_num_recipients
    if limit <= 0:
        return None
    count = len(named_addresses(ctx, "To", "Cc"))
    if count < limit:
        return None
    return Hit(
        MAX_RECIPIENTS,
        Action.defer,
        _(
            "the post names {count} recipients in To: and Cc: (the list allows fewer than {limit})"
        ).format(count=count, limit=limit),
    )
