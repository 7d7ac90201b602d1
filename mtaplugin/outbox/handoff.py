"""The one hand-off queue: rows that wait in SQL for another server, handed over by a
scheduler job, one row at a time, outside any transaction (the news queue's articles for
the news server, the archivers' queue's posts for HyperKitty or a command).

What the two queues share lives here: how many wait, which are due, a failed try counted
by the one retry policy (:mod:`mtaplugin.vocabulary.retry`) and logged, the rest of a run
deferred when the server is found down, and a row removed once the server took it (in a
transaction of its own, right after the server's answer: a run killed between the two
hands it over again, and the server keeps one copy per Message-ID).  What a row holds and
to whom it goes stays with each queue.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import session_scope
from mtaplugin.vocabulary.retry import HandOffFailed, failed_try

T = TypeVar("T")


class HandOffRow(Protocol):
    """A row of a hand-off queue (``NewsArticle``, ``ArchiverHandOff``)."""

    id: int
    mailing_list_id: int
    attempts: int
    last_error: str
    failed: bool
    queued_at: datetime
    next_attempt_at: datetime


def waiting(session: Session, model: Any, mailing_list_id: int | None = None) -> int:
    """How many rows of ``model``'s queue wait (failed ones not counted)."""
    query = select(func.count(model.id)).where(model.failed.is_(False))
    if mailing_list_id is not None:
        query = query.where(model.mailing_list_id == mailing_list_id)
    return int(session.scalar(query) or 0)


def due(
    session: Session,
    model: Any,
    now: datetime,
    limit: int,
    *where: ColumnElement[bool],
    columns: Sequence[Any] = (),
) -> list[Any]:
    """The rows of ``model``'s queue due at ``now``, oldest first: their ids (or their
    ``columns``)."""
    query = (
        select(*(columns or (model.id,)))
        .where(model.failed.is_(False), model.next_attempt_at <= now, *where)
        .order_by(model.id)
        .limit(limit)
    )
    return list(session.execute(query).all() if columns else session.scalars(query))


@dataclass(frozen=True)
class Tried:
    """One try of a row: ``taken`` by the server, or refused with ``error`` (neither: the
    row was gone, failed meanwhile, or had nothing to hand over)."""

    taken: bool = False
    error: HandOffFailed | None = None

    @property
    def server_down(self) -> bool:
        """The server refused for now: the rest of its rows wait with this one."""
        return self.error is not None and self.error.temporary


class Queue:
    """One hand-off queue's rows of ``model``, told apart in the log by ``job`` (the
    scheduler job that drains it) and ``label`` (what a row is, for whom)."""

    def __init__(
        self, model: type[Any], job: str, label: Callable[[Any], str], log: logging.Logger
    ) -> None:
        self.model = model
        self.job = job
        self.label = label
        self.log = log

    def new_row(self, now: datetime, **fields: Any) -> Any:
        """A row of ``fields``, due at once, never tried yet."""
        return self.model(
            attempts=0,
            queued_at=now,
            next_attempt_at=now,
            failed=False,
            last_error="",
            **fields,
        )

    def waiting(self, session: Session, mailing_list_id: int | None = None) -> int:
        """How many rows wait (failed ones not counted)."""
        return waiting(session, self.model, mailing_list_id)

    def hand_over(
        self,
        sessions: sessionmaker[Session],
        row_id: int,
        read: Callable[[Session, Any], T | None],
        give: Callable[[T], None],
        now: datetime,
    ) -> Tried:
        """One try of the row ``row_id``: ``read`` takes what goes out of the row (in a
        transaction of its own; None: nothing to hand over), ``give`` hands it to the
        server, outside any transaction.  A refusal (:class:`HandOffFailed`) counts a
        failed try; a taken row goes."""
        with session_scope(sessions) as session:
            row = session.get(self.model, row_id)
            content = None if row is None or row.failed else read(session, row)
        if content is None:
            return Tried()
        try:
            give(content)
        except HandOffFailed as e:
            self.failed_try(sessions, row_id, str(e), e.temporary, now)
            return Tried(error=e)
        self.taken(sessions, row_id)
        return Tried(taken=True)

    def failed_try(
        self,
        sessions: sessionmaker[Session],
        row_id: int,
        error: str,
        temporary: bool,
        now: datetime,
    ) -> None:
        """Count one failed try of the row (its next attempt set, or given up), in a
        transaction of its own, and log it."""
        with session_scope(sessions) as session:
            row = session.get(self.model, row_id)
            if row is None:
                return
            if failed_try(row, error, temporary, now):
                self.log.error(
                    "%s: %s given up after %d attempt(s): %s",
                    self.job, self.label(row), row.attempts, error,
                )  # fmt: skip
            else:
                self.log.warning(
                    "%s: %s deferred (attempt %d): %s",
                    self.job, self.label(row), row.attempts, error,
                )  # fmt: skip

    def defer(
        self, sessions: sessionmaker[Session], row_ids: Sequence[int], error: str, now: datetime
    ) -> None:
        """The server could not be reached: each of these rows counts one more try."""
        for row_id in row_ids:
            self.failed_try(sessions, row_id, error, True, now)

    def taken(self, sessions: sessionmaker[Session], row_id: int) -> None:
        """The server took the row's content: the row goes."""
        with session_scope(sessions) as session:
            row = session.get(self.model, row_id)
            if row is not None:
                session.delete(row)
