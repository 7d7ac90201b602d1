"""The news queue: articles of list posts waiting for the news server, and the
``news-post`` job that posts them.

An article is queued by the stage of accepted posts (:mod:`mtaplugin.accepted`), in the
worker's transaction that fans the post out, after the answer; never posted during the
SMTP transaction.  The job posts the due ones, one NNTP session per
run; each posted article's row is deleted in its own transaction right after the
server's 240.  A run killed between the two posts it again on the next run: the server
already has that Message-ID (INN: "441 435 Duplicate"), which the client counts as
posted, so the group gets it once.

Retries (:mod:`mtaplugin.vocabulary.retry`, the queue of :mod:`mtaplugin.outbox.handoff`,
as the archivers' queue): a temporary error (server down, 4xx) keeps the
row and sets its next attempt a minute later, doubling up to an hour; an article still not
posted five days after it was queued, or one the server refused for good (5xx), is marked
failed with the error, logged, and kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import session_scope
from mtaplugin.model import MailingList, NewsArticle
from mtaplugin.news import NewsError, NewsServer, connect
from mtaplugin.news.outgoing import article_for, gateways
from mtaplugin.outbox import handoff
from mtaplugin.vocabulary.job import JobContext
from mtaplugin.vocabulary.retry import backoff

log = logging.getLogger(__name__)

#: articles one run posts at most (the rest wait for the next run)
BATCH = 500


QUEUE = handoff.Queue(
    NewsArticle, "news-post", lambda row: f"article {row.id} for {row.newsgroup}", log
)

#: how many articles wait for the news server (failed ones not counted)
waiting = QUEUE.waiting


def enqueue(session: Session, mlist: MailingList, raw: bytes, now: datetime) -> NewsArticle | None:
    """Queue the article of ``raw`` (the post's archive copy) for the list's newsgroup, in
    the caller's transaction; None when the list does not gateway to news."""
    if not gateways(mlist):
        return None
    row: NewsArticle = QUEUE.new_row(
        now,
        mailing_list_id=mlist.id,
        newsgroup=mlist.linked_newsgroup.strip(),
        article=article_for(mlist, raw),
    )
    session.add(row)
    return row


def post_due(
    sessions: sessionmaker[Session], connect: Callable[[], NewsServer], now: datetime
) -> int:
    """Post the articles due at ``now``; the number posted."""
    with session_scope(sessions) as session:
        due = handoff.due(session, NewsArticle, now, BATCH)
    if not due:
        return 0
    posted = 0
    try:
        with connect() as server:
            for n, row_id in enumerate(due):
                tried = QUEUE.hand_over(sessions, row_id, _article, server.post, now)
                if tried.server_down:
                    # The server is in trouble: the others wait with it.
                    QUEUE.defer(sessions, due[n + 1 :], str(tried.error), now)
                    break
                posted += int(tried.taken)
    except NewsError as e:  # could not connect (or lost the server between articles)
        QUEUE.defer(sessions, due, str(e), now)
    return posted


def _article(session: Session, row: NewsArticle) -> bytes:
    return row.article


def run(ctx: JobContext) -> int:
    settings = ctx.world.settings
    if not settings.nntp.host:
        return 0
    return post_due(ctx.world.sessions, lambda: connect(settings), ctx.now)


__all__ = ["backoff", "enqueue", "post_due", "waiting"]
