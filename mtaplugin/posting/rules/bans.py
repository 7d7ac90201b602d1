"""banned-address: the From: address is banned from this list or from the whole site.

Bans are part of the list snapshot (exact addresses in a set, ``^regex`` bans compiled),
so this costs no query.  Mailman discards; mtaplugin refuses at SMTP time, which tells
the sender and sends nothing back."""

from __future__ import annotations

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Hit, PostContext

BANNED_ADDRESS = "banned-address"


def banned_address(ctx: PostContext) -> Hit | None:
    if ctx.snapshot is None or not ctx.sender or not ctx.snapshot.is_banned(ctx.sender):
        return None
    return Hit(
        BANNED_ADDRESS,
        Action.reject,
        _("{sender} is banned from posting to {list}").format(
            sender=ctx.sender, list=ctx.mlist.fqdn_listname
        ),
    )
