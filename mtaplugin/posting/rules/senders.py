"""no-senders: a post without a From: address cannot be moderated or answered."""

from __future__ import annotations

from mtaplugin.i18n import _
from mtaplugin.model.enums import Action
from mtaplugin.posting.rules.base import Hit, PostContext

NAME = "no-senders"


def no_senders(ctx: PostContext) -> Hit | None:
    if ctx.sender:
        return None
    # Mailman discards; refusing at SMTP time tells the sender and sends nothing back.
    return Hit(NAME, Action.reject, _("the post has no From: address"))
