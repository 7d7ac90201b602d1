"""The pure decision of one sync: who joins, who leaves, and whether the removals stay
within the source's bound.  No SQL here.

Only members the source added itself may leave by a sync (``managed``); a member added by
hand stays whatever the directory says.  An empty answer is refused outright: a directory
that suddenly lists nobody is far more often broken than right.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass

from mtaplugin.roster_sources.directory import DirectoryEntry


@dataclass(frozen=True)
class Plan:
    #: (email, name) to add, in the directory's order
    additions: tuple[tuple[str, str], ...]
    #: members the source added that the directory no longer lists
    removals: tuple[str, ...]
    #: listed by the directory and members already (by hand or by an earlier sync)
    unchanged: int
    #: the most one sync may remove without ``force``
    bound: int

    @property
    def over_bound(self) -> bool:
        return len(self.removals) > self.bound


def removal_bound(roster_size: int, max_removals: int, max_removal_percent: int) -> int:
    """The larger of ``max_removals`` and ``max_removal_percent`` % of the roster (rounded
    down): a small list may lose a few members, a big one a share of them."""
    return max(max_removals, roster_size * max_removal_percent // 100, 0)


def plan(
    answer: Iterable[DirectoryEntry],
    roster: Set[str],
    managed: Set[str],
    *,
    max_removals: int,
    max_removal_percent: int,
) -> Plan:
    """``roster``: every address holding the role now; ``managed``: those the source
    added (a subset of ``roster``)."""
    wanted: dict[str, str] = {}
    for entry in answer:
        wanted.setdefault(entry.email, entry.name)
    additions = tuple((e, n) for e, n in wanted.items() if e not in roster)
    removals = tuple(sorted(e for e in managed if e in roster and e not in wanted))
    unchanged = sum(1 for e in wanted if e in roster)
    return Plan(
        additions,
        removals,
        unchanged,
        removal_bound(len(roster), max_removals, max_removal_percent),
    )


def summary(added: int, removed: int, refused: Mapping[str, str] | None = None) -> str:
    """The one-line outcome recorded on the source (untranslated, like the audit log)."""
    text = f"{added} added, {removed} removed"
    if refused:
        text += f", {len(refused)} refused ({', '.join(sorted(refused))})"
    return text
