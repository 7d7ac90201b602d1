"""A member's standing as people see it: the delivery status resolved member → address →
user, why delivery is off ("disabled by bounces on 2026-12-04"), and a list's recent
bounce events.  Read by the web members page and the CLI; nothing here changes a row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from mtaplugin.enums import BounceContext, DeliveryStatus
from mtaplugin.i18n import _
from mtaplugin.model import Address, BounceEvent, MailingList, Member, User


def status_column() -> ColumnElement[DeliveryStatus]:
    """The member's delivery status, member → address → user → enabled, in SQL (the
    query must join :class:`Address` and outer-join :class:`User` on the address)."""
    return func.coalesce(
        Member.delivery_status,
        Address.delivery_status,
        User.delivery_status,
        DeliveryStatus.enabled.value,
    )


def resolve_status(value: DeliveryStatus | str | None) -> DeliveryStatus:
    """What :func:`status_column` selected, as the enum (a driver may give the name)."""
    if value is None:
        return DeliveryStatus.enabled
    try:
        return DeliveryStatus(value)
    except ValueError:
        return DeliveryStatus.unknown


def disabled_reason(
    status: DeliveryStatus,
    last_bounce: datetime | None,
    gettext: Callable[[str], str] = _,
) -> str:
    """Why delivery is off, in words ("" when it is on).  Bounces disable a member at the
    bounce that reached the threshold, so its day is the member's last bounce."""
    if status is DeliveryStatus.enabled:
        return ""
    if status is DeliveryStatus.by_bounces:
        if last_bounce is None:
            return gettext("disabled by bounces")
        return gettext("disabled by bounces on {date}").format(date=last_bounce.date().isoformat())
    if status is DeliveryStatus.by_user:
        return gettext("disabled by the member")
    if status is DeliveryStatus.by_moderator:
        return gettext("disabled by a moderator")
    return gettext("disabled for an unknown reason")


def when(value: datetime | None) -> str:
    """A stored time for people: ``2026-12-04 08:15 UTC``, or ``-``."""
    if value is None:
        return "-"
    return value.strftime("%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True)
class Standing:
    """What the owners see of one member's bounces."""

    score: int
    last_bounce: datetime | None
    last_warning: datetime | None
    warnings_sent: int
    status: DeliveryStatus

    def reason(self, gettext: Callable[[str], str] = _) -> str:
        return disabled_reason(self.status, self.last_bounce, gettext)


def standings(session: Session, member_ids: list[int]) -> dict[int, Standing]:
    """The standing of each member (by primary key), in one query."""
    if not member_ids:
        return {}
    rows = session.execute(
        select(
            Member.id,
            Member.bounce_score,
            Member.last_bounce_received,
            Member.last_warning_sent,
            Member.total_warnings_sent,
            status_column(),
        )
        .join(Address, Address.id == Member.address_id)
        .outerjoin(User, User.id == Address.user_id)
        .where(Member.id.in_(member_ids))
    ).all()
    return {
        pk: Standing(score or 0, last, warned, warnings or 0, resolve_status(status))
        for pk, score, last, warned, warnings, status in rows
    }


def recent_events(
    session: Session, mlist: MailingList, since: datetime | None, limit: int
) -> list[BounceEvent]:
    """The list's bounce events, newest first: those at or after ``since``, at most
    ``limit``."""
    query = select(BounceEvent).where(BounceEvent.mailing_list_id == mlist.id)
    if since is not None:
        query = query.where(BounceEvent.at >= since)
    query = query.order_by(BounceEvent.at.desc(), BounceEvent.id.desc()).limit(limit)
    return list(session.scalars(query))


def event_state(event: BounceEvent, gettext: Callable[[str], str] = _) -> str:
    """``processed`` / ``pending``, and ``probe`` for the bounce of a VERP probe."""
    state = gettext("processed") if event.processed else gettext("pending")
    if event.context is BounceContext.probe:
        state += ", " + gettext("probe")
    return state


def since_days(now: datetime, days: float | None) -> datetime | None:
    return None if days is None else now - timedelta(days=days)
