"""Every periodic job (:class:`~mtaplugin.vocabulary.job.Job`) in one table: its name, how
often it runs, the function that does it (in the module of its own area) and the line
``mtaplugin jobs list`` and docs/reference/jobs.md show.  :data:`JOBS` is the order
``mtaplugin jobs list`` shows them in."""

from __future__ import annotations

from datetime import timedelta

from mtaplugin.archivers import queue as archivers_queue
from mtaplugin.bounces import jobs as bounce_jobs
from mtaplugin.digests import send as digests
from mtaplugin.engine import rates
from mtaplugin.frontends import news as news_gate
from mtaplugin.manage import dkim_activation
from mtaplugin.news import queue as news_queue
from mtaplugin.notices import refresh
from mtaplugin.roster_sources import jobs as roster_jobs
from mtaplugin.scheduler import expiry, reminders, retention
from mtaplugin.vocabulary.job import Job
from mtaplugin.wiring import World

PENDING_EXPIRY = Job(
    name="pending-expiry",
    every=timedelta(hours=1),
    run=expiry.expire_pending,
    doc="remove pending requests whose token expired (nobody is told, as in Mailman)",
)
PENDING_REMINDERS = Job(
    name="pending-reminders",
    every=reminders.EVERY,
    run=reminders.remind,
    doc="remind the moderators of every list with held posts or requests (daily)",
)
HOLD_EXPIRY = Job(
    name="hold-expiry",
    every=timedelta(hours=1),
    run=expiry.expire_holds,
    doc="discard held posts older than their list's max_days_to_hold (audit log)",
)
HOUSEKEEPING = Job(
    name="housekeeping",
    every=timedelta(days=1),
    run=retention.housekeep,
    doc="remove old outbox rows, bounce events, filtered posts, autoresponse records "
    "and audit entries ([retention])",
)
PROCESS_BOUNCES = Job(
    name="bounces",
    every=timedelta(minutes=1),
    run=bounce_jobs.process,
    doc="bounce events: bounce scores, probes, delivery disabled at the threshold",
)
BOUNCE_WARNINGS = Job(
    name="bounce-warnings",
    every=timedelta(hours=1),
    run=bounce_jobs.warn,
    doc="members disabled by bounces: warnings at the list's interval, then removal",
)
#: the daily digest run (Mailman's ``mailman digests --periodic`` cron entry)
SEND_DIGESTS = Job(
    name="digests",
    every=digests.PERIODIC_EVERY,
    run=digests.send_periodic,
    doc="send the digest of every list with digest_send_periodic that has posts waiting",
)
NEWS_POST = Job(
    name="news-post",
    every=timedelta(minutes=1),
    run=news_queue.run,
    doc="post the list posts waiting for the news server (the Usenet gateway)",
)
NEWS_GATE = Job(
    name="news-gate",
    every=timedelta(minutes=5),
    run=news_gate.run,
    doc="post the new articles of each list's linked newsgroup to the list (gateway_to_mail)",
)
ARCHIVERS = Job(
    name="archivers",
    every=timedelta(minutes=1),
    run=archivers_queue.run,
    doc="hand the archived posts to the external archivers (HyperKitty, mail-archive, a command)",
)
DKIM_CHECK = Job(
    name="dkim-check",
    every=timedelta(hours=1),
    run=dkim_activation.check_waiting_keys,
    doc="activate the new DKIM keys that DNS publishes now (they sign from then on)",
)
TEMPLATE_FETCH = Job(
    name="template-fetch",
    every=timedelta(minutes=1),
    run=refresh.run,
    doc="fetch the http(s) template URIs that have no text yet or whose text expired",
)
POST_RATES = Job(
    name="post-rates",
    every=timedelta(minutes=30),
    run=rates.prune,
    doc="remove post counts older than two hours (the [rules] rate limits)",
)
ROSTER_SYNC = Job(
    name="roster-sync",
    every=timedelta(minutes=1),
    run=roster_jobs.sync_rosters,
    doc="sync the rosters read from LDAP or SQL whose interval has passed",
)

JOBS: tuple[Job[World], ...] = (
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
