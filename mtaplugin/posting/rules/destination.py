"""implicit-destination: the list is not named in To: or Cc: (a blind copy, or mail sent
through an alias the list does not know)."""

from __future__ import annotations

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Hit, PostContext
from mtaplugin.regexes import usable

IMPLICIT_DESTINATION = "implicit-destination"


def named_addresses(ctx: PostContext, *headers: str) -> list[str]:
    return [a.lower() for _n, a in ctx.post.named(*headers) if a]


def _alias_matches(alias: str, addresses: list[str]) -> bool:
    alias = alias.strip().lower()
    if not alias:
        return False
    if alias.startswith("^"):
        pattern = usable(alias, "acceptable_aliases")
        return pattern is not None and any(pattern.match(a) for a in addresses)
    return alias in addresses


def implicit_destination(ctx: PostContext) -> Hit | None:
    if not ctx.mlist.require_explicit_destination:
        return None
    found = named_addresses(ctx, "To", "Cc", "Resent-To", "Resent-Cc")
    if ctx.mlist.fqdn_listname.lower() in found:
        return None
    if any(_alias_matches(a, found) for a in ctx.mlist.acceptable_aliases):
        return None
    return Hit(
        IMPLICIT_DESTINATION,
        Action.defer,
        _("{list} is not in To: or Cc: (a blind copy, or sent through an alias)").format(
            list=ctx.mlist.fqdn_listname
        ),
    )
