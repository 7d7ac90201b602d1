"""What every hand-off queue (the news articles, the archivers' hand-offs) is tested
with: a post held and released; the retry story (the far end is down, the rows back off
on the clock, then go once it is back; a row that cannot go for five days is given up)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from mtaplugin.engine import ListEngine
from mtaplugin.manage import held as held_ops
from mtaplugin.manage import lists
from tests.helpers import drain, envelope, make_post
from tests.unit.sites import Site

START = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)


class FarEnd(Protocol):
    """A stand-in news server or archiver; ``down``: it cannot be reached."""

    down: bool


def backs_off_then_goes(
    site: Site, kind: type, run: Callable[[datetime], int], far: FarEnd, *, error: str
) -> None:
    """Two rows of ``kind`` queued at :data:`START` on ``site``; ``run(now)`` is the job's
    pass (how many went); ``error``: what the far end being down is called."""
    far.down = True
    assert run(START) == 0
    assert [r.attempts for r in site.rows(kind)] == [1, 1]
    assert site.rows(kind)[0].next_attempt_at == START + timedelta(minutes=1)
    assert error in site.rows(kind)[0].last_error
    assert run(START + timedelta(seconds=30)) == 0  # not due yet: nothing tried
    assert [r.attempts for r in site.rows(kind)] == [1, 1]
    assert run(START + timedelta(minutes=1)) == 0
    assert site.rows(kind)[0].next_attempt_at == START + timedelta(minutes=3)
    far.down = False
    assert run(START + timedelta(minutes=3)) == 2
    assert site.rows(kind) == []
    assert run(START + timedelta(minutes=4)) == 0  # nothing left to do


def given_up_after_five_days(
    site: Site, kind: type, run: Callable[[datetime], int], far: FarEnd
) -> None:
    """The last row of ``kind`` queued at :data:`START` is tried while the far end is down."""
    far.down = True
    run(START + timedelta(days=4))
    assert not site.rows(kind)[-1].failed
    run(START + timedelta(days=5))
    assert site.rows(kind)[-1].failed


def held_then_released(site: Site, engine: ListEngine, kind: type, **outlets: Any) -> None:
    """A post held (the list's emergency moderation: no row of ``kind`` yet), released by a
    moderator, the accepted posts drained after each step with what the site gives
    (``outlets``: ``news=``, ``archivers=``, as :func:`tests.helpers.drain` takes)."""
    with site.sessions.begin() as s:
        lists.get(s, site.address).emergency = True  # every post is held
    try:
        raw = make_post("Anne <anne@example.com>", site.address, "held then released")
        engine.decide(envelope(site.address, mail_from="anne@example.com", queue_id="Q2"), raw)
        drain(site.sessions, **outlets)
        assert site.rows(kind) == []
        (held,) = site.held()
        archivers = outlets.get("archivers")
        with site.sessions.begin() as s:
            mlist = lists.get(s, site.address)
            held_ops.approve(
                held_ops.Moderator(s, mlist, "mod@example.com", archivers=archivers), held.id
            )
        drain(site.sessions, **outlets)
    finally:
        with site.sessions.begin() as s:
            lists.get(s, site.address).emergency = False
