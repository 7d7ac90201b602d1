"""The periodic check of members whose delivery bounces disabled: a warning every
``bounce_you_are_disabled_warnings_interval`` until ``bounce_you_are_disabled_warnings``
were sent, then, one interval after the last, removal (:func:`scores.warning_step`).

Each member is handled in a transaction of its own that holds the warning (in the outbox)
and its counter, or the removal and its notices, so that a run cut short is simply run
again and nobody gets a warning twice.  Lists with ``process_bounces`` off are left alone.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.bounces import consequences, scores
from mtaplugin.bounces.processing import DB_DOWN
from mtaplugin.config import Settings
from mtaplugin.enums import DeliveryStatus, MemberRole
from mtaplugin.manage.subscriptions.steps import WorkflowSettings
from mtaplugin.model import Address, MailingList, Member

log = logging.getLogger(__name__)


def _disabled(session: Session) -> list[int]:
    return list(
        session.scalars(
            select(Member.id)
            .join(MailingList, MailingList.id == Member.mailing_list_id)
            .where(
                Member.role == MemberRole.member,
                Member.delivery_status == DeliveryStatus.by_bounces,
                MailingList.process_bounces.is_(True),
            )
            .order_by(Member.id)
        )
    )


def send_warnings(sessions: sessionmaker[Session], settings: Settings, now: datetime) -> int:
    """Warn or remove every member whose time has come; answers how many."""
    workflow = WorkflowSettings.from_settings(settings, clock=lambda: now)
    with sessions() as s:
        ids = _disabled(s)
    done = 0
    for member_id in ids:
        try:
            with sessions.begin() as s:
                done += check_one(s, member_id, workflow, now)
        except DB_DOWN:
            raise
        except Exception:
            log.exception("bounce warning of member %d failed; it is tried again", member_id)
    return done


def check_one(session: Session, member_id: int, workflow: WorkflowSettings, now: datetime) -> bool:
    """Warn or remove one member, in the caller's transaction; False when it was not time."""
    row = session.execute(
        select(Member, Address.email, MailingList)
        .join(Address, Address.id == Member.address_id)
        .join(MailingList, MailingList.id == Member.mailing_list_id)
        .where(Member.id == member_id, Member.delivery_status == DeliveryStatus.by_bounces)
        .with_for_update(of=Member, skip_locked=True)
    ).first()
    if row is None:
        return False
    member, email, mlist = row
    step = scores.warning_step(
        member.total_warnings_sent,
        member.last_warning_sent,
        now,
        mlist.bounce_you_are_disabled_warnings,
        mlist.bounce_you_are_disabled_warnings_interval,
    )
    who = consequences.Affected(session, mlist, member, email, now, workflow)
    if step is scores.Step.warn:
        consequences.warn(who)
    elif step is scores.Step.remove:
        consequences.remove(who)
    return step is not scores.Step.wait
