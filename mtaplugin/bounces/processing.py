"""Bounce processing: every unprocessed :class:`~mtaplugin.model.BounceEvent` (stored by
the inline DSN decision) applied to its member, as :mod:`mtaplugin.bounces.scores` decides.

Each event is processed in a transaction of its own, which marks it processed together
with everything it does (the score, the probe, disabled delivery, the notices in the
outbox), so that a run cut short by a kill -9 is simply run again.  The event and the
member row are locked while that happens (PostgreSQL), so that two mail hosts never count
one bounce twice.

An event of a list that is gone or has ``process_bounces`` off, or of an address that is no
member (role member) of that list, is marked processed and changes nothing; so is a
policy refusal or a delay notice (``kind`` other than ``hard``).
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.bounces import consequences, scores
from mtaplugin.config import Settings
from mtaplugin.enums import DeliveryStatus, MemberRole
from mtaplugin.manage.subscriptions.steps import WorkflowSettings
from mtaplugin.model import Address, BounceEvent, MailingList, Member
from mtaplugin.notices import bounce_scores

log = logging.getLogger(__name__)

#: the database is away: the run stops (the scheduler runs it again later)
DB_DOWN = (OperationalError, InterfaceError)

#: events read per query (each is then processed in its own transaction)
BATCH = 500


def process_events(sessions: sessionmaker[Session], settings: Settings, now: datetime) -> int:
    """Process every unprocessed bounce event, oldest first; answers how many."""
    workflow = WorkflowSettings.from_settings(settings, clock=lambda: now)
    done = 0
    after = 0
    while True:
        with sessions() as s:
            ids = s.scalars(
                select(BounceEvent.id)
                .where(BounceEvent.processed.is_(False), BounceEvent.id > after)
                .order_by(BounceEvent.id)
                .limit(BATCH)
            ).all()
        if not ids:
            return done
        for event_id in ids:
            try:
                with sessions.begin() as s:
                    done += process_one(s, event_id, settings, workflow, now)
            except DB_DOWN:
                raise
            except Exception:
                # One bad event must not keep the others waiting: it stays unprocessed
                # and is tried again at the next run.
                log.exception("bounce event %d not processed; it is tried again", event_id)
        after = ids[-1]


def process_one(
    session: Session,
    event_id: int,
    settings: Settings,
    workflow: WorkflowSettings,
    now: datetime,
) -> bool:
    """Process one event in the caller's transaction; False when it was already done."""
    event = session.scalars(
        select(BounceEvent)
        .where(BounceEvent.id == event_id, BounceEvent.processed.is_(False))
        .with_for_update(skip_locked=True)
    ).first()
    if event is None:
        return False
    event.processed = True
    mlist = (
        session.get(MailingList, event.mailing_list_id)
        if event.mailing_list_id is not None
        else None
    )
    if mlist is None or not mlist.process_bounces:
        return True
    email = event.email.strip().lower()
    member = session.scalars(
        select(Member)
        .join(Address, Address.id == Member.address_id)
        .where(
            Member.mailing_list_id == mlist.id,
            Member.role == MemberRole.member,
            Address.email == email,
        )
        .with_for_update(of=Member)
    ).first()
    if member is None:
        log.info("bounce of %s on %s: not a member, ignored", email, mlist.fqdn_listname)
        return True
    decision = scores.decide(
        scores.Standing(
            member.bounce_score,
            member.last_bounce_received,
            delivering=member.delivery_status in (None, DeliveryStatus.enabled),
        ),
        event.at,
        event.kind,
        event.context,
        scores.Rules(
            threshold=mlist.bounce_score_threshold,
            stale_after=mlist.bounce_info_stale_after,
            probes=settings.bounces.verp_probes,
        ),
    )
    who = consequences.Affected(session, mlist, member, email, now, workflow)
    member.bounce_score = decision.score
    member.last_bounce_received = decision.last_bounce_received
    if decision.counted:
        log.info(
            "bounce score of %s on %s is now %d",
            email,
            mlist.fqdn_listname,
            decision.score,
        )
        if mlist.bounce_notify_owner_on_bounce_increment:
            raw = bounce_scores.increment(session, mlist, email, decision.score)
            consequences.tell_owners(who, raw)
    if decision.act is scores.Act.probe:
        consequences.probe(who)
    elif decision.act is scores.Act.disable:
        log.info("delivery of %s on %s disabled by bounces", email, mlist.fqdn_listname)
        consequences.disable(who)
    return True
