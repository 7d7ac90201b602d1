"""Small database helpers for the unit tests."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session


def count(session: Session, model: type) -> int:
    """The number of rows in ``model``'s table."""
    return int(session.scalar(select(func.count()).select_from(model)) or 0)


def counts(session: Session, *models: type) -> dict[str, int]:
    """Row counts of several tables, to compare before and after an operation."""
    return {m.__name__: count(session, m) for m in models}
