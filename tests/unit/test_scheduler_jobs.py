"""The scheduler's own jobs, each run through a Runner on a ManualClock, on SQLite and
PostgreSQL: pending-expiry, pending-reminders, hold-expiry and housekeeping.  Each is run
twice where a second run (after a kill -9, or the same day) must not do the work again.

The jobs act on the whole database, which the tests of this module share; every test
looks only at the rows of its own site (or the rows it made)."""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from email.message import EmailMessage

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import wiring
from mtaplugin.clock import ManualClock, system_clock
from mtaplugin.config import Settings
from mtaplugin.config.site import RetentionSettings
from mtaplugin.db import engine_of
from mtaplugin.enums import OutboxStatus, RequestType, TokenOwner
from mtaplugin.manage import lists, pending
from mtaplugin.model import (
    AuditEntry,
    AutoResponseRecord,
    BounceEvent,
    FilteredPost,
    HeldMessage,
    OutboxMessage,
    PendingRequest,
)
from mtaplugin.scheduler.expiry import HOLD_EXPIRY_ACTOR
from mtaplugin.scheduler.retention import housekeep
from mtaplugin.vocabulary.job import Job, JobContext
from mtaplugin.worker.registry import (
    HOLD_EXPIRY,
    HOUSEKEEPING,
    JOBS,
    PENDING_EXPIRY,
    PENDING_REMINDERS,
)
from mtaplugin.worker.runner import Runner
from tests.unit.sites import Site


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(system_clock().replace(microsecond=0))


def world_of(
    sessions: sessionmaker[Session], clock: ManualClock, settings: Settings | None = None
) -> wiring.World:
    return wiring.build(settings or Settings(), db=engine_of(sessions), clock=clock)


@pytest.fixture
def world(module_sessions: sessionmaker[Session], clock: ManualClock) -> Iterator[wiring.World]:
    yield world_of(module_sessions, clock)


def run(world: wiring.World, job: Job) -> int:
    """Run ``job`` now, as ``mtaplugin jobs run`` does; its count."""
    outcome = Runner(world, [job]).run_now(job.name)
    assert not outcome.error
    assert outcome.result is not None
    return outcome.result


def test_the_registry_names_each_job_once() -> None:
    names = [j.name for j in JOBS]
    assert len(set(names)) == len(names)
    assert {"pending-expiry", "pending-reminders", "hold-expiry", "housekeeping"} <= set(names)
    assert all(j.doc and j.every > timedelta(0) for j in JOBS)


# --- pending-expiry ------------------------------------------------------------------------
def add_request(
    site: Site,
    email_: str,
    now: datetime,
    life: timedelta,
    owner: TokenOwner = TokenOwner.subscriber,
    kind: RequestType = RequestType.subscription,
) -> str:
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        req = pending.create(
            s, kind, email_, step="confirm", owner=owner, life=life, now=now,
            mailing_list_id=mlist.id,
        )  # fmt: skip
        return req.token


def tokens(site: Site) -> set[str]:
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        return set(
            s.scalars(
                select(PendingRequest.token).where(PendingRequest.mailing_list_id == mlist.id)
            )
        )


def test_pending_expiry_removes_the_expired_requests_only(
    site: Site, world: wiring.World, clock: ManualClock
) -> None:
    old = add_request(site, "late@example.com", clock() - timedelta(days=4), timedelta(days=3))
    live = add_request(site, "soon@example.com", clock() - timedelta(days=2), timedelta(days=3))
    assert run(world, PENDING_EXPIRY) >= 1
    assert tokens(site) == {live}
    assert old not in tokens(site)
    clock.advance(days=1, seconds=1)
    run(world, PENDING_EXPIRY)
    assert tokens(site) == set()


# --- hold-expiry -----------------------------------------------------------------------------
def add_held(site: Site, held_at: datetime, list_name: str = "team") -> int:
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.addr(list_name))
        h = HeldMessage(
            mailing_list_id=mlist.id,
            message_id=f"<{held_at.timestamp()}@example.net>",
            sender="stranger@example.net",
            subject="old post",
            raw=b"Subject: old post\r\n\r\nhello\r\n",
            hold_date=held_at,
        )
        s.add(h)
        s.flush()
        return h.id


def test_hold_expiry_discards_posts_older_than_max_days_to_hold_with_an_audit_entry(
    site: Site, world: wiring.World, clock: ManualClock
) -> None:
    site.update(max_days_to_hold=3)
    old = add_held(site, clock() - timedelta(days=3, minutes=1))
    young = add_held(site, clock() - timedelta(days=2))
    assert run(world, HOLD_EXPIRY) == 1
    assert [h.id for h in site.held()] == [young]
    with site.sessions() as s:
        (entry,) = s.scalars(
            select(AuditEntry).where(
                AuditEntry.mailing_list_id == site.mlist().id, AuditEntry.action == "held.discard"
            )
        )
    assert entry.actor == HOLD_EXPIRY_ACTOR
    assert entry.detail["request_id"] == old
    assert "max_days_to_hold (3 days)" in entry.detail["reason"]
    # Run again (as after a kill -9): nothing more is discarded until the young one is old.
    assert run(world, HOLD_EXPIRY) == 0
    clock.advance(days=1, minutes=1)
    assert run(world, HOLD_EXPIRY) == 1
    assert site.held() == []


def test_hold_expiry_keeps_posts_forever_when_max_days_to_hold_is_0(
    site: Site, world: wiring.World, clock: ManualClock
) -> None:
    site.update(max_days_to_hold=0)
    kept = add_held(site, clock() - timedelta(days=3650))
    run(world, HOLD_EXPIRY)
    assert [h.id for h in site.held()] == [kept]


# --- pending-reminders -----------------------------------------------------------------------
def reminders(site: Site) -> list[tuple[list[str], EmailMessage]]:
    found = []
    for row in site.outbox():
        msg = email.message_from_bytes(row.raw, policy=email.policy.default)
        assert isinstance(msg, EmailMessage)
        if "moderator request" in str(msg["Subject"]):
            found.append((sorted(row.recipients), msg))
    return found


def test_pending_reminders_tell_the_moderators_daily_even_with_immediate_notices_off(
    site: Site, world: wiring.World, clock: ManualClock
) -> None:
    site.update(admin_immed_notify=False)
    add_held(site, clock() - timedelta(hours=3))
    add_held(site, clock() - timedelta(hours=2))
    add_request(site, "wants-in@example.com", clock(), timedelta(days=180), TokenOwner.moderator)
    # A request still waiting for its subscriber's confirmation is not the moderators'.
    add_request(site, "unconfirmed@example.com", clock(), timedelta(days=3))
    assert run(world, PENDING_REMINDERS) >= 1
    ((to, msg),) = reminders(site)
    assert to == ["mod@example.com", "olive@example.com"]
    assert msg["Subject"] == f"3 moderator request(s) waiting on {site.address}"
    assert msg["To"] == f"team-owner@{site.host}"
    body = msg.get_content()
    assert f"The list {site.address} has 3 requests waiting for a moderator." in body
    (row,) = site.outbox()
    assert row.mail_from == f"team-bounces@{site.host}"
    # Run again the same day (as after a kill -9 mid-run): no second reminder.
    clock.advance(minutes=15)
    run(world, PENDING_REMINDERS)
    assert len(reminders(site)) == 1
    # The next day, still waiting: reminded again.
    clock.advance(days=1)
    run(world, PENDING_REMINDERS)
    assert len(reminders(site)) == 2


def test_pending_reminders_leave_a_list_with_nothing_waiting_alone(
    site: Site, world: wiring.World, clock: ManualClock
) -> None:
    # Expired requests do not count.
    add_request(
        site, "gone@example.com", clock() - timedelta(days=200), timedelta(days=180),
        TokenOwner.moderator,
    )  # fmt: skip
    run(world, PENDING_REMINDERS)
    assert reminders(site) == []


# --- housekeeping ----------------------------------------------------------------------------
def seed(site: Site, at: datetime, tag: str) -> dict[str, int]:
    """One row of each kind housekeeping looks at, dated ``at``; their ids."""
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        rows: dict[str, object] = {
            "sent": OutboxMessage(
                mail_from="x@example.com", recipients=[], raw=b"x", created_at=at,
                next_attempt_at=at, status=OutboxStatus.sent, mailing_list_id=mlist.id,
            ),
            "failed": OutboxMessage(
                mail_from="x@example.com", recipients=[], raw=b"x", created_at=at,
                next_attempt_at=at, status=OutboxStatus.failed, mailing_list_id=mlist.id,
            ),
            "queued": OutboxMessage(
                mail_from="x@example.com", recipients=["y@example.com"], raw=b"x",
                created_at=at, next_attempt_at=at + timedelta(days=9999),
                status=OutboxStatus.queued, mailing_list_id=mlist.id,
            ),
            "bounce": BounceEvent(
                mailing_list_id=mlist.id, email=f"{tag}@example.com", at=at, processed=True
            ),
            "bounce-new": BounceEvent(
                mailing_list_id=mlist.id, email=f"{tag}@example.com", at=at, processed=False
            ),
            "filtered": FilteredPost(mailing_list_id=mlist.id, raw=b"x", filtered_at=at),
            "autoresponse": AutoResponseRecord(
                email=f"{tag}@example.com", mailing_list_id=mlist.id, response_type="hold",
                sent_on=at,
            ),
            "audit": AuditEntry(
                actor="me", action=f"test.{tag}", mailing_list_id=mlist.id, at=at
            ),
        }  # fmt: skip
        s.add_all(rows.values())
        s.flush()
        return {k: int(v.id) for k, v in rows.items()}  # type: ignore[attr-defined]


MODELS = {
    "sent": OutboxMessage,
    "failed": OutboxMessage,
    "queued": OutboxMessage,
    "bounce": BounceEvent,
    "bounce-new": BounceEvent,
    "filtered": FilteredPost,
    "autoresponse": AutoResponseRecord,
    "audit": AuditEntry,
}


def present(site: Site, ids: dict[str, int]) -> set[str]:
    with site.sessions() as s:
        return {k for k, i in ids.items() if s.get(MODELS[k], i) is not None}


def test_housekeeping_removes_what_retention_no_longer_keeps(
    site: Site, world: wiring.World, clock: ManualClock
) -> None:
    now = clock()
    ancient = seed(site, now - timedelta(days=400), "ancient")
    month = seed(site, now - timedelta(days=31), "month")
    week = seed(site, now - timedelta(days=8), "week")
    today = seed(site, now - timedelta(hours=1), "today")
    assert run(world, HOUSEKEEPING) >= 6 + 3 + 2
    # The defaults: sent 7 d, failed 30 d, processed bounces 90 d, filtered 30 d,
    # autoresponse records 7 d, audit log 365 d; queued rows and unprocessed bounces stay.
    assert present(site, ancient) == {"queued", "bounce-new"}
    assert present(site, month) == {"queued", "bounce", "bounce-new", "audit"}
    assert present(site, week) == {"queued", "bounce", "bounce-new", "audit", "failed", "filtered"}
    assert present(site, today) == set(today)


def test_housekeeping_keeps_forever_what_retention_sets_to_0(
    site: Site, module_sessions: sessionmaker[Session], clock: ManualClock
) -> None:
    forever = RetentionSettings(
        sent_outbox_days=0,
        failed_outbox_days=0,
        bounce_events_days=0,
        filtered_posts_days=0,
        autoresponse_records_days=0,
        audit_log_days=1,
    )
    world = world_of(module_sessions, clock, replace(Settings(), retention=forever))
    old = seed(site, clock() - timedelta(days=3000), "forever")
    run(world, HOUSEKEEPING)
    assert present(site, old) == set(old) - {"audit"}


def test_housekeeping_removes_in_batches(
    site: Site, world: wiring.World, clock: ManualClock
) -> None:
    seeded = [seed(site, clock() - timedelta(days=400), f"batch{i}") for i in range(5)]
    housekeep(JobContext(world, clock()), batch=2)
    with site.sessions() as s:
        audits = s.scalar(
            select(func.count(AuditEntry.id)).where(
                AuditEntry.id.in_([ids["audit"] for ids in seeded])
            )
        )
    assert audits == 0
