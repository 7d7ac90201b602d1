"""loop: a post that already carries our List-Post header came back to us."""

from __future__ import annotations

import re

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Hit, PostContext

LOOP = "loop"
_MAILTO = re.compile(r"<\s*mailto:([^>?\s]+)", re.IGNORECASE)


def loop(ctx: PostContext) -> Hit | None:
    # RFC 2369 §3.4: List-Post: <mailto:list@host> (comments and parameters allowed)
    ours = ctx.mlist.fqdn_listname.lower()
    for value in ctx.post.get_all("List-Post"):
        for address in _MAILTO.findall(value):
            if address.lower() == ours:
                return Hit(LOOP, Action.discard, _("the post already went through this list"))
    return None
