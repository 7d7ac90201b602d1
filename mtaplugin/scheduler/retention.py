"""``housekeeping``: remove the rows the ``[retention]`` settings no longer keep -- sent
and failed outbox rows, processed bounce events, filtered posts, autoresponse records and
the audit log -- in batches, each batch its own short transaction (a run cut short has
simply removed less; the next one goes on)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, delete, select
from sqlalchemy.orm import InstrumentedAttribute

from mtaplugin.config.site import RetentionSettings
from mtaplugin.db import session_scope
from mtaplugin.enums import OutboxStatus
from mtaplugin.model import AuditEntry, AutoResponseRecord, BounceEvent, FilteredPost, OutboxMessage
from mtaplugin.model.base import Base
from mtaplugin.vocabulary.job import JobContext

log = logging.getLogger(__name__)

#: rows removed per transaction
BATCH = 1000


@dataclass(frozen=True)
class Rule:
    """Rows of ``model`` older than ``days`` by ``when`` and matching ``also`` go."""

    #: the ``[retention]`` key
    setting: str
    model: type[Base]
    when: InstrumentedAttribute[datetime]
    also: tuple[ColumnElement[bool], ...] = ()


RULES = (
    Rule(
        "sent_outbox_days",
        OutboxMessage,
        OutboxMessage.created_at,
        (OutboxMessage.status == OutboxStatus.sent,),
    ),
    Rule(
        "failed_outbox_days",
        OutboxMessage,
        OutboxMessage.created_at,
        (OutboxMessage.status == OutboxStatus.failed,),
    ),
    Rule("bounce_events_days", BounceEvent, BounceEvent.at, (BounceEvent.processed.is_(True),)),
    Rule("filtered_posts_days", FilteredPost, FilteredPost.filtered_at),
    Rule("autoresponse_records_days", AutoResponseRecord, AutoResponseRecord.sent_on),
    Rule("audit_log_days", AuditEntry, AuditEntry.at),
)


def rules_in_force(retention: RetentionSettings) -> Iterator[tuple[Rule, int]]:
    for rule in RULES:
        days = int(getattr(retention, rule.setting))
        if days > 0:  # 0: kept forever
            yield rule, days


def housekeep(ctx: JobContext, batch: int = BATCH) -> int:
    """Remove what ``[retention]`` no longer keeps; how many rows in all."""
    total = 0
    for rule, days in rules_in_force(ctx.world.settings.retention):
        cutoff = ctx.now - timedelta(days=days)
        pk = rule.model.__table__.c.id
        removed = 0
        while True:
            with session_scope(ctx.world.sessions) as session:
                ids = list(
                    session.scalars(
                        select(pk).where(rule.when < cutoff, *rule.also).order_by(pk).limit(batch)
                    )
                )
                if ids:
                    session.execute(
                        delete(rule.model)
                        .where(pk.in_(ids))
                        .execution_options(synchronize_session=False)
                    )
            removed += len(ids)
            if len(ids) < batch:
                break
        if removed:
            log.info("housekeeping: %d row(s) removed (%s = %d)", removed, rule.setting, days)
        total += removed
    return total
