"""The counts behind the ``[rules]`` rate limits (rules ``sender-rate`` and ``list-rate``).

Posts are counted per key -- ``sender:<From: address>`` across every list of the site and
``list:<list id>`` -- in ten-minute windows (table ``post_rates``).  "The last hour" is
the current window and the five before it, so a limit is exact to within ten minutes and a
burst ages out window by window instead of all at once.  The counts are read before the
rules run and written in the decision's own transaction (a post that is refused, or whose
transaction rolls back, is not counted), so every milter process and every mail host that
shares the database sees the same numbers.  Nothing is read or written when the limits
are off (their default).  The ``post-rates`` job removes windows older than two hours.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, func, select

from mtaplugin.db import session_scope, upsert_insert
from mtaplugin.model import PostRate
from mtaplugin.vocabulary.job import JobContext

log = logging.getLogger(__name__)

WINDOW = timedelta(minutes=10)
#: the windows that make "the last hour"
HOUR = 6
#: windows older than this are removed by the ``post-rates`` job
KEEP = timedelta(hours=2)


def sender_key(address: str) -> str:
    return "sender:" + address.strip().lower()


def list_key(list_id: str) -> str:
    return "list:" + list_id


def keys(list_ids: Iterable[str], sender: str) -> list[str]:
    """The keys a post counts under: each of ``list_ids``, and its ``sender`` across the
    site (none at all when no list counts it)."""
    found = [list_key(i) for i in list_ids]
    return [*found, sender_key(sender)] if found and sender else found


def window_of(now: datetime) -> datetime:
    """The start of the ten-minute window ``now`` falls in."""
    return now.replace(minute=now.minute - now.minute % 10, second=0, microsecond=0)


def last_hour(conn: Connection, keys: Iterable[str], now: datetime) -> dict[str, int]:
    """Posts counted for each of ``keys`` in the last hour (0 for a key never counted)."""
    wanted = list(dict.fromkeys(keys))
    counts = dict.fromkeys(wanted, 0)
    if not wanted:
        return counts
    since = window_of(now) - WINDOW * (HOUR - 1)
    rows = conn.execute(
        select(PostRate.key, func.sum(PostRate.posts))
        .where(PostRate.key.in_(wanted), PostRate.window_start >= since)
        .group_by(PostRate.key)
    )
    for key, posts in rows:
        counts[key] = int(posts or 0)
    return counts


def count(conn: Connection, keys: Iterable[str], now: datetime) -> None:
    """Count one post for each of ``keys`` in ``now``'s window, in ``conn``'s transaction
    (an additive upsert: concurrent deciders on PostgreSQL and SQLite both count)."""
    start = window_of(now)
    rows = [{"key": k, "window_start": start, "posts": 1} for k in dict.fromkeys(keys)]
    if not rows:
        return
    insert = upsert_insert(conn.dialect.name)
    conn.execute(
        insert(PostRate).on_conflict_do_update(
            index_elements=[PostRate.key, PostRate.window_start],
            set_={"posts": PostRate.posts + 1},
        ),
        rows,
    )


def prune(ctx: JobContext) -> int:
    """Remove the windows no limit reads any more; how many rows went."""
    with session_scope(ctx.world.sessions) as session:
        result = session.execute(delete(PostRate).where(PostRate.window_start < ctx.now - KEEP))
        removed = int(getattr(result, "rowcount", 0) or 0)
    if removed:
        log.info("post-rates: %d old window(s) removed", removed)
    return removed
