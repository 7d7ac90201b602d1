"""Member counts, remembered per list and role while the list's ``generation`` stands.

Database triggers move a list's generation on every change to its members, owners and
moderators (migration 0002), so a count of them filed under the generation read before
it is never stale: after any change the generation differs and the count is taken again.
Counting a 100 000-member roster costs tens of milliseconds; a page of it, or the list
of lists, need not pay that on every request.  Nonmembers are counted every time: a
poster recorded on the nonmember roster with no action of their own does not move the
generation (migration 0048).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.model import Member

_MAX = 100_000
_cache: dict[tuple[int, MemberRole], tuple[int, int]] = {}
_lock = threading.Lock()


def member_counts(
    session: Session, lists: Iterable[tuple[int, int]], role: MemberRole = MemberRole.member
) -> dict[int, int]:
    """{list pk: number of members with ``role``} for (list pk, generation) pairs."""
    counts: dict[int, int] = {}
    missing: dict[int, int] = {}
    kept = role is not MemberRole.nonmember
    with _lock:
        for pk, generation in lists:
            hit = _cache.get((pk, role)) if kept else None
            if hit is not None and hit[0] == generation:
                counts[pk] = hit[1]
            else:
                missing[pk] = generation
    if missing:
        rows = session.execute(
            select(Member.mailing_list_id, func.count())
            .where(Member.mailing_list_id.in_(list(missing)), Member.role == role)
            .group_by(Member.mailing_list_id)
        )
        found = {pk: int(n) for pk, n in rows}
        with _lock:
            if len(_cache) > _MAX:
                _cache.clear()
            for pk, generation in missing.items():
                counts[pk] = found.get(pk, 0)
                if kept:
                    _cache[(pk, role)] = (generation, counts[pk])
    return counts
