"""The news queue: articles of list posts waiting for the news server, and the
``news-post`` job that posts them.

An article is queued by the stage of accepted posts (:mod:`mtaplugin.accepted`), in the
worker's transaction that fans the post out, after the answer; never posted during the
SMTP transaction.  The job posts the due ones, one NNTP session per
run; each posted article's row is deleted in its own transaction right after the
server's 240.  A run killed between the two posts it again on the next run: the server
already has that Message-ID (INN: "441 435 Duplicate"), which the client counts as
posted, so the group gets it once.

Retries (:mod:`mtaplugin.vocabulary.retry`): a temporary error (server down, 4xx) keeps the
row and sets its next attempt a minute later, doubling up to an hour; an article still not
posted five days after it was queued, or one the server refused for good (5xx), is marked
failed with the error, logged, and kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import session_scope
from mtaplugin.model import MailingList, NewsArticle
from mtaplugin.news import NewsError, NewsServer, connect
from mtaplugin.news.outgoing import article_for, gateways
from mtaplugin.vocabulary.job import Job, JobContext
from mtaplugin.vocabulary.retry import backoff, failed_try

log = logging.getLogger(__name__)

#: articles one run posts at most (the rest wait for the next run)
BATCH = 500


def enqueue(session: Session, mlist: MailingList, raw: bytes, now: datetime) -> NewsArticle | None:
    """Queue the article of ``raw`` (the post's archive copy) for the list's newsgroup, in
    the caller's transaction; None when the list does not gateway to news."""
    if not gateways(mlist):
        return None
    row = NewsArticle(
        mailing_list_id=mlist.id,
        newsgroup=mlist.linked_newsgroup.strip(),
        article=article_for(mlist, raw),
        attempts=0,
        queued_at=now,
        next_attempt_at=now,
        failed=False,
        last_error="",
    )
    session.add(row)
    return row


def waiting(session: Session, mailing_list_id: int | None = None) -> int:
    """How many articles wait for the news server (failed ones not counted)."""
    query = select(func.count(NewsArticle.id)).where(NewsArticle.failed.is_(False))
    if mailing_list_id is not None:
        query = query.where(NewsArticle.mailing_list_id == mailing_list_id)
    return int(session.scalar(query) or 0)


def post_due(
    sessions: sessionmaker[Session], connect: Callable[[], NewsServer], now: datetime
) -> int:
    """Post the articles due at ``now``; the number posted."""
    with session_scope(sessions) as session:
        due = list(
            session.scalars(
                select(NewsArticle.id)
                .where(NewsArticle.failed.is_(False), NewsArticle.next_attempt_at <= now)
                .order_by(NewsArticle.id)
                .limit(BATCH)
            )
        )
    if not due:
        return 0
    posted = 0
    try:
        with connect() as server:
            for row_id in due:
                with session_scope(sessions) as session:
                    row = session.get(NewsArticle, row_id)
                    if row is None or row.failed:
                        continue
                    article = row.article
                try:
                    server.post(article)
                except NewsError as e:
                    _failed_try(sessions, row_id, e, now)
                    if e.temporary:
                        # The server is in trouble: the others wait with it.
                        _defer_rest(sessions, due[due.index(row_id) + 1 :], str(e), now)
                        break
                    continue
                with session_scope(sessions) as session:
                    row = session.get(NewsArticle, row_id)
                    if row is not None:
                        session.delete(row)
                posted += 1
    except NewsError as e:  # could not connect (or lost the server between articles)
        _defer_rest(sessions, due, str(e), now)
    return posted


def _failed_try(
    sessions: sessionmaker[Session], row_id: int, error: NewsError, now: datetime
) -> None:
    with session_scope(sessions) as session:
        row = session.get(NewsArticle, row_id)
        if row is None:
            return
        if failed_try(row, str(error), error.temporary, now):
            log.error(
                "news-post: article %d for %s given up after %d attempt(s): %s",
                row.id, row.newsgroup, row.attempts, error,
            )  # fmt: skip
        else:
            log.warning(
                "news-post: article %d for %s deferred (attempt %d): %s",
                row.id, row.newsgroup, row.attempts, error,
            )  # fmt: skip


def _defer_rest(
    sessions: sessionmaker[Session], row_ids: list[int], error: str, now: datetime
) -> None:
    """The server could not be reached: every article of this run counts one more try."""
    for row_id in row_ids:
        _failed_try(sessions, row_id, NewsError(error, temporary=True), now)


def run(ctx: JobContext) -> int:
    settings = ctx.world.settings
    if not settings.nntp.host:
        return 0
    return post_due(ctx.world.sessions, lambda: connect(settings), ctx.now)


NEWS_POST = Job(
    name="news-post",
    every=timedelta(minutes=1),
    run=run,
    doc="post the list posts waiting for the news server (the Usenet gateway)",
)

__all__ = ["NEWS_POST", "backoff", "enqueue", "post_due", "waiting"]
