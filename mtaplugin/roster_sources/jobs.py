"""The ``roster-sync`` job: every enabled source whose own ``interval`` has passed since
its last sync is synced (each in its own transactions; a run cut short simply syncs the
rest next time, and a sync computes its changes afresh from the roster, so running one
twice changes nothing the second time)."""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import select

from mtaplugin.db import session_scope
from mtaplugin.model import RosterSource
from mtaplugin.roster_sources.sync import sync
from mtaplugin.vocabulary.job import JobContext

log = logging.getLogger(__name__)


def due_sources(ctx: JobContext) -> list[int]:
    with session_scope(ctx.world.sessions) as session:
        rows = session.execute(
            select(RosterSource.id, RosterSource.interval, RosterSource.last_sync_at)
            .where(RosterSource.enabled.is_(True), RosterSource.interval > 0)
            .order_by(RosterSource.id)
        ).all()
    return [
        source_id
        for source_id, interval, last in rows
        if last is None or last + timedelta(seconds=interval) <= ctx.now
    ]


def sync_rosters(ctx: JobContext) -> int:
    """Sync the due sources; answers how many memberships changed."""
    from mtaplugin.wiring import workflow

    settings = workflow(ctx.world.settings, ctx.world.clock)
    changed = 0
    for source_id in due_sources(ctx):
        report = sync(ctx.world.sessions, source_id, settings)
        if report.result != "ok":
            log.warning("roster-sync: %s (%s): %s", report.list_name, report.role, report.message)
        changed += report.changed
    return changed
