"""max-recipients: To: and Cc: name ``max_num_recipients`` addresses or more."""

from __future__ import annotations

from functools import partial

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.rules.destination import named_addresses
from mtaplugin.posting.snapshot import ListSnapshot

MAX_RECIPIENTS = "max-recipients"


def max_recipients(ctx: PostContext) -> Hit | None:
    limit = ctx.mlist.max_num_recipients
    return None if limit <= 0 else _too_many(limit, ctx)


def prepare(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off when the list has no ``max_num_recipients`` (0)."""
    limit = snapshot.mlist.max_num_recipients
    return partial(_too_many, limit) if limit > 0 else None


def _too_many(limit: int, ctx: PostContext) -> Hit | None:
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
