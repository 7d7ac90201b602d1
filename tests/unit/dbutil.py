"""Small database helpers for the unit tests."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.enums import RequestType, TokenOwner
from mtaplugin.manage import pending
from mtaplugin.model import PendingRequest

#: the step a kind of request waits at first, and whose token it is (as its workflow makes it)
FIRST_STEP = {
    RequestType.subscription: ("confirm", TokenOwner.subscriber),
    RequestType.password_reset: ("reset", TokenOwner.subscriber),
    RequestType.probe: ("probe", TokenOwner.no_one),
}


def count(session: Session, model: type) -> int:
    """The number of rows in ``model``'s table."""
    return int(session.scalar(select(func.count()).select_from(model)) or 0)


def counts(session: Session, *models: type) -> dict[str, int]:
    """Row counts of several tables, to compare before and after an operation."""
    return {m.__name__: count(session, m) for m in models}


def pending_request(
    s: Session,
    kind: RequestType,
    email: str,
    now: datetime,
    life: timedelta = timedelta(days=1),
    **fields: Any,
) -> PendingRequest:
    """A request of ``kind`` for ``email`` made ``now`` and valid for ``life``, waiting at
    its first step (:data:`FIRST_STEP`); ``fields`` as :func:`pending.create` takes them."""
    step, owner = FIRST_STEP[kind]
    return pending.create(s, kind, email, step=step, owner=owner, life=life, now=now, **fields)
