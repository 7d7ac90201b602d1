"""no-senders: a post without a From: address cannot be moderated or answered."""

from __future__ import annotations

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Hit, PostContext

NO_SENDERS = "no-senders"


def no_senders(ctx: PostContext) -> Hit | None:
    if ctx.sender:
        return None
    # Mailman discards; refusing at SMTP time tells the sender and sends nothing back.
    return Hit(NO_SENDERS, Action.reject, _("the post has no From: address"))
