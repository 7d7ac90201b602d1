"""banned-address: the From: address is banned from this list or from the whole site.

Bans are part of the list snapshot (exact addresses in a set, ``^regex`` bans compiled),
so this costs no query.  Mailman discards; mtaplugin refuses at SMTP time, which tells
the sender and sends nothing back."""

from __future__ import annotations

from functools import partial

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.vocabulary.bans import BanList

BANNED_ADDRESS = "banned-address"


def banned_address(ctx: PostContext) -> Hit | None:
    if ctx.snapshot is None:
        return None
    return _banned(ctx.snapshot.bans, ctx)


def prepare(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off when neither the list nor the site bans anyone."""
    bans = snapshot.bans
    return partial(_banned, bans) if bans.exact or bans.regex else None


def _banned(bans: BanList, ctx: PostContext) -> Hit | None:
    if not ctx.sender or not bans.matches(ctx.sender):
        return None
    return Hit(
        BANNED_ADDRESS,
        Action.reject,
        _("{sender} is banned from posting to {list}").format(
            sender=ctx.sender, list=ctx.mlist.fqdn_listname
        ),
    )
