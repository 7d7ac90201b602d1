"""Every periodic job (:class:`~mtaplugin.vocabulary.job.Job`), in the order
``mtaplugin jobs list`` shows them.  Each is defined in the module of its own area."""

from __future__ import annotations

from mtaplugin.archivers.queue import ARCHIVERS
from mtaplugin.bounces.jobs import BOUNCE_WARNINGS, PROCESS_BOUNCES
from mtaplugin.digests.send import SEND_DIGESTS
from mtaplugin.engine.rates import POST_RATES
from mtaplugin.frontends.news import NEWS_GATE
from mtaplugin.manage.dkim_activation import DKIM_CHECK
from mtaplugin.news.queue import NEWS_POST
from mtaplugin.notices.refresh import TEMPLATE_FETCH
from mtaplugin.roster_sources.jobs import ROSTER_SYNC
from mtaplugin.scheduler.expiry import HOLD_EXPIRY, PENDING_EXPIRY
from mtaplugin.scheduler.reminders import PENDING_REMINDERS
from mtaplugin.scheduler.retention import HOUSEKEEPING
from mtaplugin.vocabulary.job import Job

JOBS: tuple[Job, ...] = (
    PENDING_EXPIRY,
    PENDING_REMINDERS,
    HOLD_EXPIRY,
    HOUSEKEEPING,
    PROCESS_BOUNCES,
    BOUNCE_WARNINGS,
    SEND_DIGESTS,
    NEWS_POST,
    NEWS_GATE,
    ARCHIVERS,
    DKIM_CHECK,
    TEMPLATE_FETCH,
    POST_RATES,
    ROSTER_SYNC,
)
