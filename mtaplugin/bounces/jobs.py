"""The scheduler's bounce jobs (:mod:`mtaplugin.scheduler`)."""

from __future__ import annotations

from datetime import timedelta

from mtaplugin.bounces.processing import process_events
from mtaplugin.bounces.warnings import send_warnings
from mtaplugin.vocabulary.job import Job, JobContext


def _process(ctx: JobContext) -> int:
    return process_events(ctx.world.sessions, ctx.world.settings, ctx.now)


def _warn(ctx: JobContext) -> int:
    return send_warnings(ctx.world.sessions, ctx.world.settings, ctx.now)


PROCESS_BOUNCES = Job(
    name="bounces",
    every=timedelta(minutes=1),
    run=_process,
    doc="bounce events: bounce scores, probes, delivery disabled at the threshold",
)

BOUNCE_WARNINGS = Job(
    name="bounce-warnings",
    every=timedelta(hours=1),
    run=_warn,
    doc="members disabled by bounces: warnings at the list's interval, then removal",
)
