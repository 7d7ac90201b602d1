"""The posting rules compiled once per list version.

Most of what a rule reads does not depend on the post: whether the list's settings (or the
site's) turn it on at all, the list's address lower-cased, its aliases and its
``bounce_matching_headers`` parsed and compiled, its size limit.  :func:`compiled` reads
that once per list snapshot and site policy and gives the rule table with each rule's
check prepared (:attr:`~mtaplugin.posting.rules.base.Rule.prepare`): a rule that is off
is left out, so a post only runs the rules that can hit it, in the table's order.

The chain is kept beside the snapshot it was made from: one entry per list, valid while
the post's snapshot is that very object (held weakly: the entry does not keep an old
snapshot alive).  A snapshot is read-only and made again when the
list's ``generation`` moves (:mod:`mtaplugin.lists.cache`), so a change of the list's
settings, bans or header matches is a new snapshot and compiles a new chain; so does a
different site policy.  (The snapshot's ``pk`` and ``generation`` alone would not do: a
released hold, or a test, builds a snapshot of its own at the same generation.)

Shared between the milter's threads: two threads may compile the same chain at once, and
one of the two is kept; either is right.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from mtaplugin.posting.rules.base import Rule, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot


@dataclass(frozen=True, eq=False)
class _Compiled:
    #: (weakly: a big list's old roster is not kept alive by its chain)
    snapshot: weakref.ref[ListSnapshot]
    site: SitePolicy
    table: tuple[Rule, ...]
    rules: tuple[Rule, ...]


#: list pk → the chain of its last snapshot seen
_CHAINS: dict[int, _Compiled] = {}


def compile_rules(
    table: tuple[Rule, ...], snapshot: ListSnapshot, site: SitePolicy
) -> tuple[Rule, ...]:
    """``table`` for this list version and site: each rule with its prepared check, the
    rules the settings turn off left out, the order kept."""
    out: list[Rule] = []
    for rule in table:
        if rule.prepare is None:
            out.append(rule)
            continue
        check = rule.prepare(snapshot, site)
        if check is not None:
            out.append(Rule(rule.id, rule.action, check, rule.decides))
    return tuple(out)


def compiled(table: tuple[Rule, ...], snapshot: ListSnapshot, site: SitePolicy) -> tuple[Rule, ...]:
    """The compiled chain of ``table`` for ``snapshot`` and ``site``, made at the first post
    of that snapshot and kept."""
    entry = _CHAINS.get(snapshot.pk)
    if (
        entry is not None
        and entry.snapshot() is snapshot
        and entry.table is table
        and (entry.site is site or entry.site == site)
    ):
        return entry.rules
    rules = compile_rules(table, snapshot, site)
    _CHAINS[snapshot.pk] = _Compiled(weakref.ref(snapshot), site, table, rules)
    return rules


def forget() -> None:
    """Drop every compiled chain (tests; the next post of each list compiles again)."""
    _CHAINS.clear()
