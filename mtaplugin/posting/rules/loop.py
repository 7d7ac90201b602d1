"""loop: a post that already carries our List-Post header came back to us."""

from __future__ import annotations

import re
from functools import partial

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot

LOOP = "loop"
_MAILTO = re.compile(r"<\s*mailto:([^>?\s]+)", re.IGNORECASE)


def loop(ctx: PostContext) -> Hit | None:
    return _loop(ctx.mlist.fqdn_listname.lower(), ctx)


def prepare(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Always on; the list's address lower-cased once."""
    return partial(_loop, snapshot.mlist.fqdn_listname.lower())


def _loop(ours: str, ctx: PostContext) -> Hit | None:
    # RFC 2369 §3.4: List-Post: <mailto:list@host> (comments and parameters allowed)
    for value in ctx.post.get_all("List-Post"):
        for address in _MAILTO.findall(value):
            if address.lower() == ours:
                return Hit(LOOP, Action.discard, _("the post already went through this list"))
    return None
