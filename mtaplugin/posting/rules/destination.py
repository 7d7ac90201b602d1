"""implicit-destination: the list is not named in To: or Cc: (a blind copy, or mail sent
through an alias the list does not know)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.regexes import Pattern, usable

if TYPE_CHECKING:
    from mtaplugin.model import MailingList

IMPLICIT_DESTINATION = "implicit-destination"


def named_addresses(ctx: PostContext, *headers: str) -> list[str]:
    return [a.lower() for _n, a in ctx.post.named(*headers) if a]


def implicit_destination(ctx: PostContext) -> Hit | None:
    if not ctx.mlist.require_explicit_destination:
        return None
    return _named(*_known(ctx.mlist), ctx)


def prepare(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off unless the list has ``require_explicit_destination``; the list's address and
    its ``acceptable_aliases`` read once."""
    mlist = snapshot.mlist
    if not mlist.require_explicit_destination:
        return None
    return partial(_named, *_known(mlist))


def _known(mlist: MailingList) -> tuple[frozenset[str], tuple[Pattern, ...]]:
    """The addresses that name the list, lower-cased: its own and its exact aliases; and
    its ``^regex`` aliases, compiled (one that does not compile is left out)."""
    exact = {mlist.fqdn_listname.lower()}
    patterns: list[Pattern] = []
    for alias in mlist.acceptable_aliases:
        alias = alias.strip().lower()
        if alias.startswith("^"):
            pattern = usable(alias, "acceptable_aliases")
            if pattern is not None:
                patterns.append(pattern)
        elif alias:
            exact.add(alias)
    return frozenset(exact), tuple(patterns)


def _named(exact: frozenset[str], patterns: tuple[Pattern, ...], ctx: PostContext) -> Hit | None:
    post = ctx.post
    if post.get_all("Resent-To") or post.get_all("Resent-Cc"):
        found = named_addresses(ctx, "To", "Cc", "Resent-To", "Resent-Cc")
    else:
        # the same values as To: and Cc: alone, parsed once for max-recipients and the
        # audience too
        found = named_addresses(ctx, "To", "Cc")
    if not exact.isdisjoint(found):
        return None
    if any(p.match(a) for p in patterns for a in found):
        return None
    return Hit(
        IMPLICIT_DESTINATION,
        Action.defer,
        _("{list} is not in To: or Cc: (a blind copy, or sent through an alias)").format(
            list=ctx.mlist.fqdn_listname
        ),
    )
