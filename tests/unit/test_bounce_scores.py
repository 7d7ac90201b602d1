"""Bounce scores and their consequences (mtaplugin/bounces): events processed into scores,
probes, disabled delivery, warnings and removal, on a clock the test moves; and a member
who switches delivery back on starts over.  On SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import email
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.message import Message

import pytest
from falcon.testing import TestClient
from sqlalchemy import select

from mtaplugin import wiring
from mtaplugin.api.app import create_app
from mtaplugin.bounces import processing, scores, verp
from mtaplugin.bounces.warnings import send_warnings
from mtaplugin.clock import ManualClock
from mtaplugin.commands.mail import CommandPolicy
from mtaplugin.config import DatabaseSettings, Settings
from mtaplugin.config.mail import BouncesSettings
from mtaplugin.db import engine_of
from mtaplugin.engine import ListEngine
from mtaplugin.enums import BounceContext, BounceKind, DeliveryStatus, MemberRole, RequestType
from mtaplugin.lists.roster import regular_recipients
from mtaplugin.mailauth.identity import AuthenticationPolicy
from mtaplugin.manage import lists, members
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import AuditEntry, BounceEvent, Member, OutboxMessage, PendingRequest
from mtaplugin.notices import bounce_scores
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.vocabulary.job import JobContext
from mtaplugin.worker.registry import BOUNCE_WARNINGS, PROCESS_BOUNCES
from tests.helpers import make_post, plain_text
from tests.unit.sites import Site

ANNE = "anne@example.com"
OWNER = "olive@example.com"
SETTINGS = Settings()
PROBES = replace(SETTINGS, bounces=replace(BouncesSettings(), verp_probes=True))
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


# --- the pure decisions ----------------------------------------------------------------------
RULES = scores.Rules(threshold=3, stale_after=timedelta(days=7), probes=False)
HARD, NORMAL = BounceKind.hard, BounceContext.normal


def standing(score: int = 0, last: datetime | None = None, delivering: bool = True):
    return scores.Standing(score, last, delivering)


def test_a_hard_bounce_counts_once_a_day():
    first = scores.decide(standing(), T0, HARD, NORMAL, RULES)
    assert (first.score, first.last_bounce_received, first.counted) == (1, T0, True)
    later = scores.decide(standing(1, T0), T0 + timedelta(hours=11), HARD, NORMAL, RULES)
    assert (later.score, later.counted) == (1, False)
    # An older bounce processed late counts nothing and keeps the newest date.
    older = scores.decide(standing(1, T0), T0 - timedelta(days=2), HARD, NORMAL, RULES)
    assert (older.score, older.last_bounce_received) == (1, T0)
    nxt = scores.decide(standing(1, T0), T0 + timedelta(days=1), HARD, NORMAL, RULES)
    assert (nxt.score, nxt.act) == (2, scores.Act.none)


def test_stale_bounce_info_starts_again_at_one():
    d = scores.decide(standing(2, T0), T0 + timedelta(days=7, seconds=1), HARD, NORMAL, RULES)
    assert d.score == 1
    d = scores.decide(standing(2, T0), T0 + timedelta(days=7), HARD, NORMAL, RULES)
    assert d.score == 3


def test_the_threshold_disables_or_probes():
    at = T0 + timedelta(days=1)
    assert scores.decide(standing(2, T0), at, HARD, NORMAL, RULES).act is scores.Act.disable
    probes = replace(RULES, probes=True)
    assert scores.decide(standing(2, T0), at, HARD, NORMAL, probes).act is scores.Act.probe
    # Only the probe's own bounce disables, whatever the score.
    probed = scores.decide(standing(0), at, HARD, BounceContext.probe, probes)
    assert (probed.act, probed.score) == (scores.Act.disable, 0)


@pytest.mark.parametrize("kind", [BounceKind.policy, BounceKind.delayed])
def test_policy_and_delay_bounces_change_nothing(kind):
    d = scores.decide(standing(2, T0), T0 + timedelta(days=1), kind, NORMAL, RULES)
    assert (d.score, d.last_bounce_received, d.counted, d.act) == (2, T0, False, scores.Act.none)


def test_a_member_not_receiving_mail_is_not_scored():
    d = scores.decide(standing(0, None, delivering=False), T0, HARD, NORMAL, RULES)
    assert (d.score, d.counted, d.act) == (0, False, scores.Act.none)
    d = scores.decide(standing(0, None, False), T0, HARD, BounceContext.probe, RULES)
    assert d.act is scores.Act.none


def test_warning_steps():
    week = timedelta(days=7)
    assert scores.warning_step(1, T0, T0 + timedelta(days=6), 3, week) is scores.Step.wait
    assert scores.warning_step(1, T0, T0 + week, 3, week) is scores.Step.warn
    assert scores.warning_step(3, T0, T0 + week, 3, week) is scores.Step.remove
    assert scores.warning_step(0, None, T0, 3, week) is scores.Step.warn
    assert scores.warning_step(0, None, T0, 0, week) is scores.Step.remove


# --- against the database --------------------------------------------------------------------
@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def bounce(
    site: Site,
    who: str = ANNE,
    at: datetime | None = None,
    kind: BounceKind = BounceKind.hard,
    context: BounceContext = BounceContext.normal,
    list_name: str = "team",
) -> None:
    """What the inline DSN decision stores."""
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.addr(list_name))
        s.add(
            BounceEvent(
                mailing_list_id=mlist.id,
                email=who,
                at=at or T0,
                kind=kind,
                context=context,
                status="5.1.1",
                diagnostic="550 5.1.1 no such user",
            )
        )


def member(site: Site, who: str = ANNE, list_name: str = "team") -> Member:
    with site.sessions() as s:
        found = members.get(s, lists.get(s, site.addr(list_name)), who, MemberRole.member)
        s.expunge(found)
        return found


def mails(site: Site, rcpt: str) -> list[tuple[OutboxMessage, Message]]:
    return [(r, email.message_from_bytes(r.raw)) for r in site.outbox() if rcpt in r.recipients]


def subjects(site: Site, rcpt: str) -> list[str]:
    return [str(m["Subject"]) for _r, m in mails(site, rcpt)]


def process(site: Site, clock: ManualClock, settings: Settings = SETTINGS) -> int:
    return processing.process_events(site.sessions, settings, clock())


def warn(site: Site, clock: ManualClock) -> int:
    return send_warnings(site.sessions, SETTINGS, clock())


def unprocessed(site: Site) -> int:
    with site.sessions() as s:
        pk = lists.get(s, site.addr("team")).id
        rows = s.scalars(
            select(BounceEvent).where(
                BounceEvent.mailing_list_id == pk, BounceEvent.processed.is_(False)
            )
        )
        return len(list(rows))


def bounce_daily(site: Site, clock: ManualClock, days: int, settings: Settings = SETTINGS) -> None:
    for _ in range(days):
        bounce(site, at=clock())
        process(site, clock, settings)
        clock.advance(days=1)


def test_five_bounces_on_five_days_disable_warn_three_times_then_remove(
    site: Site, clock: ManualClock
):
    with site.sessions.begin() as s:
        other = lists.create(s, f"other@{site.host}")
        members.add(s, other, ANNE)
    bounce_daily(site, clock, 4)
    anne = member(site)
    assert (anne.bounce_score, anne.delivery_status) == (4, None)
    assert anne.last_bounce_received == T0 + timedelta(days=3)
    assert subjects(site, OWNER) == []  # bounce_notify_owner_on_bounce_increment is off

    bounce_daily(site, clock, 1)
    anne = member(site)
    assert (anne.bounce_score, anne.delivery_status) == (5, DeliveryStatus.by_bounces)
    assert (anne.total_warnings_sent, anne.last_warning_sent) == (1, T0 + timedelta(days=4))
    assert [s for s in subjects(site, OWNER)] == [f"{ANNE}'s delivery disabled on Team"]
    assert subjects(site, ANNE) == ["Your delivery from the Team mailing list is disabled"]
    assert {r.mail_from for r, _m in mails(site, ANNE) + mails(site, OWNER)} == {
        site.addr("team-bounces")
    }
    with site.sessions() as s:
        recipients = regular_recipients(s, lists.get(s, site.addr("team")).id)
    assert [r.email for r in recipients] == ["bob@example.com"]
    assert unprocessed(site) == 0
    # The same address on another list is untouched.
    elsewhere = member(site, list_name="other")
    assert (elsewhere.bounce_score, elsewhere.delivery_status) == (0, None)

    # Warnings every seven days (the first went with the disable) ...
    # (The jobs work on the whole database; the module's other tests share it.)
    warn(site, clock)
    assert member(site).total_warnings_sent == 1
    for sent in (2, 3):
        clock.advance(days=7)
        warn(site, clock)
        warn(site, clock)  # run again: nothing twice
        assert member(site).total_warnings_sent == sent
        assert member(site).last_warning_sent == clock()
    assert len(subjects(site, ANNE)) == 3
    # ... and an interval after the third, removal.
    clock.advance(days=6, hours=23)
    warn(site, clock)
    assert site.is_member(ANNE)
    clock.advance(hours=1)
    warn(site, clock)
    assert not site.is_member(ANNE)
    assert site.is_member(ANNE, "other")
    assert subjects(site, OWNER)[-1] == f"{ANNE} removed from Team because of bounces"
    assert len(subjects(site, ANNE)) == 3  # no goodbye: it would bounce
    with site.sessions() as s:
        pk = lists.get(s, site.addr("team")).id
        audit = s.scalars(
            select(AuditEntry.action).where(
                AuditEntry.mailing_list_id == pk, AuditEntry.actor == "bounces"
            )
        ).all()
    assert list(audit) == ["member.delivery_disabled", "member.unsubscribe"]


def test_two_bounces_the_same_day_count_once_and_stale_info_restarts(
    site: Site, clock: ManualClock
):
    site.update(bounce_notify_owner_on_bounce_increment=True)
    bounce(site, at=clock())
    bounce(site, at=clock() + timedelta(hours=3))
    process(site, clock)
    assert member(site).bounce_score == 1
    assert subjects(site, OWNER) == [f"{ANNE}'s bounce score on Team went up"]
    clock.advance(days=1)
    bounce(site, at=clock())
    process(site, clock)
    assert member(site).bounce_score == 2
    clock.advance(days=8)
    bounce(site, at=clock())
    process(site, clock)
    anne = member(site)
    assert (anne.bounce_score, anne.last_bounce_received) == (1, clock())
    assert len(subjects(site, OWNER)) == 3
    assert unprocessed(site) == 0


def test_policy_and_delay_events_are_processed_without_change(site: Site, clock: ManualClock):
    bounce(site, at=clock(), kind=BounceKind.policy)
    bounce(site, at=clock(), kind=BounceKind.delayed)
    process(site, clock)
    anne = member(site)
    assert (anne.bounce_score, anne.last_bounce_received) == (0, None)
    assert unprocessed(site) == 0


def test_events_of_nonmembers_or_lists_not_processing_bounces_change_nothing(
    site: Site, clock: ManualClock
):
    bounce(site, who="stranger@example.com", at=clock())
    bounce(site, who=OWNER, at=clock())  # an owner is no member
    process(site, clock)
    assert unprocessed(site) == 0
    site.update(process_bounces=False)
    bounce(site, at=clock())
    process(site, clock)
    assert member(site).bounce_score == 0
    assert unprocessed(site) == 0
    assert site.outbox() == []


def test_probes_first_then_only_the_probe_bounce_disables(site: Site, clock: ManualClock):
    bounce_daily(site, clock, 5, PROBES)
    anne = member(site)
    assert (anne.bounce_score, anne.delivery_status) == (5, None)
    [(row, probe)] = mails(site, ANNE)
    with site.sessions() as s:
        [request] = s.scalars(
            select(PendingRequest).where(
                PendingRequest.email == ANNE, PendingRequest.request_type == RequestType.probe
            )
        ).all()
        assert request.mailing_list_id == lists.get(s, site.addr("team")).id
    assert row.mail_from == verp.encode_token(site.addr("team-bounces"), request.token)
    assert str(probe["Subject"]) == "Team mailing list probe message"
    # Another ordinary bounce while the probe is out: no second probe, still enabled.
    bounce_daily(site, clock, 1, PROBES)
    assert len(mails(site, ANNE)) == 1 and member(site).delivery_status is None
    # The probe bounces: disabled, the owner told, the first warning sent.
    bounce(site, at=clock(), context=BounceContext.probe)
    process(site, clock, PROBES)
    anne = member(site)
    assert (anne.delivery_status, anne.total_warnings_sent) == (DeliveryStatus.by_bounces, 1)
    assert subjects(site, OWNER) == [f"{ANNE}'s delivery disabled on Team"]
    with site.sessions() as s:
        assert s.get(PendingRequest, request.id) is None


def test_a_failure_midway_leaves_the_event_to_be_done_again(
    site: Site, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
):
    bounce_daily(site, clock, 4)

    def crash(*args: object) -> bytes:
        raise RuntimeError("killed")

    monkeypatch.setattr(bounce_scores, "disable", crash)
    bounce(site, at=clock())
    bounce(site, who="bob@example.com", at=clock())
    process(site, clock)  # logged; the other events go on
    assert unprocessed(site) == 1
    assert member(site, "bob@example.com").bounce_score == 1
    assert (member(site).bounce_score, member(site).delivery_status) == (4, None)
    assert site.outbox() == []
    monkeypatch.undo()
    process(site, clock)
    assert member(site).delivery_status is DeliveryStatus.by_bounces
    assert len(subjects(site, OWNER)) == 1 and len(subjects(site, ANNE)) == 1
    assert unprocessed(site) == 0


def test_a_list_without_warnings_removes_at_the_threshold(site: Site, clock: ManualClock):
    site.update(bounce_you_are_disabled_warnings=0, bounce_score_threshold=2)
    bounce_daily(site, clock, 2)
    assert not site.is_member(ANNE)
    assert subjects(site, OWNER) == [f"{ANNE} removed from Team because of bounces"]


def test_re_enabling_delivery_starts_over(site: Site, clock: ManualClock):
    bounce_daily(site, clock, 5)
    assert member(site).delivery_status is DeliveryStatus.by_bounces
    with site.sessions.begin() as s:
        found = members.get(s, lists.get(s, site.addr("team")), ANNE, MemberRole.member)
        found.delivery_status = DeliveryStatus.enabled
    anne = member(site)
    assert (anne.bounce_score, anne.total_warnings_sent, anne.last_warning_sent) == (0, 0, None)
    # Setting it to what it already is resets nothing.
    bounce_daily(site, clock, 1)
    with site.sessions.begin() as s:
        found = members.get(s, lists.get(s, site.addr("team")), ANNE, MemberRole.member)
        found.delivery_status = DeliveryStatus.enabled
    assert member(site).bounce_score == 1
    # No more warnings or removal for a member who is back.
    clock.advance(days=30)
    warn(site, clock)
    assert site.is_member(ANNE) and member(site).total_warnings_sent == 0


def test_set_delivery_on_by_mail_starts_over(site: Site, clock: ManualClock):
    bounce_daily(site, clock, 5)
    engine = ListEngine(
        site.sessions,
        site_owner="postmaster@site.test",
        auth_policy=AuthenticationPolicy(trusted_authserv_ids=frozenset({"mx.test"})),
        command_policy=CommandPolicy(workflow=WorkflowSettings(), replies_per_day=3),
    )
    raw = make_post(
        ANNE,
        site.addr("team-request"),
        subject="set delivery on",
        body="\n",
        headers={"Authentication-Results": "mx.test; dkim=pass header.d=example.com"},
    )
    env = Envelope(
        mail_from=ANNE,
        recipients=[f"<{site.addr('team-request')}>"],
        client_address="192.0.2.1",
        queue_id="Q1",
    )
    engine.decide(env, raw)
    anne = member(site)
    assert (anne.delivery_status, anne.bounce_score) == (DeliveryStatus.enabled, 0)
    assert (anne.total_warnings_sent, anne.last_warning_sent) == (0, None)


def test_the_jobs_run_on_the_world_and_its_time(site: Site, clock: ManualClock):
    world = wiring.build(SETTINGS, db=engine_of(site.sessions), clock=clock)
    site.update(bounce_score_threshold=1)
    bounce(site, at=clock())
    assert PROCESS_BOUNCES.run(JobContext(world, clock())) >= 1
    assert member(site).delivery_status is DeliveryStatus.by_bounces
    clock.advance(days=7)
    assert BOUNCE_WARNINGS.run(JobContext(world, clock())) >= 1
    assert member(site).total_warnings_sent == 2
    assert (PROCESS_BOUNCES.every, BOUNCE_WARNINGS.every) == (
        timedelta(minutes=1),
        timedelta(hours=1),
    )


def test_delivery_on_over_rest_starts_over(site: Site, clock: ManualClock):
    bounce_daily(site, clock, 5)
    app = create_app(Settings(database=DatabaseSettings(url=site.url)), site.sessions)
    auth = base64.b64encode(b"restadmin:restpass").decode()
    r = TestClient(app).simulate_patch(
        f"/3.1/members/{member(site).member_id}/preferences",
        body="delivery_status=enabled",
        headers={
            "Authorization": f"Basic {auth}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    assert r.status_code == 204, r.text
    anne = member(site)
    assert (anne.delivery_status, anne.bounce_score, anne.total_warnings_sent) == (
        DeliveryStatus.enabled,
        0,
        0,
    )


def test_the_member_reads_the_warning_in_their_language(site: Site, clock: ManualClock):
    site.update(bounce_score_threshold=1)
    with site.sessions.begin() as s:
        found = members.get(s, lists.get(s, site.addr("team")), ANNE, MemberRole.member)
        found.preferred_language = "de"
    bounce(site, at=clock())
    process(site, clock)
    [(row, warning)] = mails(site, ANNE)
    assert str(warning["Subject"]) == "Ihre Zustellung von der Mailingliste Team ist abgeschaltet"
    text = " ".join(plain_text(warning).split())
    assert f"Die Zustellung der Liste {site.addr('team')} an Ihre Adresse {ANNE}" in text
    assert row.mail_from == site.addr("team-bounces")
    assert subjects(site, OWNER) == [f"{ANNE}'s delivery disabled on Team"]
