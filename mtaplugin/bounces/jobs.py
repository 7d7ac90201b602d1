"""What the bounce jobs ``bounces`` and ``bounce-warnings`` run (declared in
:mod:`mtaplugin.worker.registry`)."""

from __future__ import annotations

from mtaplugin.bounces.processing import process_events
from mtaplugin.bounces.warnings import send_warnings
from mtaplugin.vocabulary.job import JobContext


def process(ctx: JobContext) -> int:
    return process_events(ctx.world.sessions, ctx.world.settings, ctx.now)


def warn(ctx: JobContext) -> int:
    return send_warnings(ctx.world.sessions, ctx.world.settings, ctx.now)
