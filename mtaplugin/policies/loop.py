"""loop: a post that already carries our List-Post header came back to us."""

from __future__ import annotations

from mtaplugin.i18n import _
from mtaplugin.model.enums import Action
from mtaplugin.policies.base import Hit, PostContext

NAME = "loop"


def loop(ctx: PostContext) -> Hit | None:
    # RFC 2369 §3.4: List-Post: <mailto:list@host>
    ours = f"<mailto:{ctx.mlist.fqdn_listname}>"
    for value in ctx.post.get_all("List-Post"):
        if value.strip().lower() == ours:
            return Hit(NAME, Action.discard, _("the post already went through this list"))
    return None
