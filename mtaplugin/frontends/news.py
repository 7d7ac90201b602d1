"""News to list (Mailman 2.1's ``gateway_to_mail``): the ``news-gate`` job polls each
list's ``linked_newsgroup`` and posts the new articles to the list through the decision
path of mail (:meth:`~mtaplugin.engine.ListEngine.decide_claimed`): rules, holds,
decorations and digests apply as to any post, the copies go through the outbox.

**Exactly once.**  Each list keeps a watermark, the number of the last article it gated or
skipped (:class:`~mtaplugin.model.news.NewsWatermark`).  An article is claimed by moving
the watermark from the number the poll read to the article's number with one ``UPDATE``
that matches only while the watermark is still there, in the same transaction as the
post's decision: a crash before the commit leaves both undone, and a second runner (another
mail host on the same PostgreSQL, or ``mtaplugin news gate`` while the job runs) finds the
watermark moved, stops and leaves the list to the first.

**The first poll** of a group gates nothing: it sets the watermark to the group's last
article, as Mailman did, so that switching ``gateway_to_mail`` on does not flood the
members with the group's history.

**Skipped** (the watermark moves on): articles that came from the list itself (they carry
its ``List-Id:``, see :func:`~mtaplugin.news.articles.is_ours`), malformed articles
(logged), numbers the server no longer has.  **Left for next time** (the watermark stays):
a group that does not exist, credentials refused (logged; the owner must act), a
temporary error of the server or of the database.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection, select, update
from sqlalchemy.exc import IntegrityError

from mtaplugin.db import connection_scope, session_scope
from mtaplugin.engine import ListEngine
from mtaplugin.errors import TryLater
from mtaplugin.i18n import _
from mtaplugin.model import MailingList
from mtaplugin.model.news import NewsWatermark
from mtaplugin.news import NewsError, NewsServer, connect
from mtaplugin.news.articles import Skip, inspect
from mtaplugin.posting.verdict import Accept, Discard, Reject, TempFail, Verdict
from mtaplugin.vocabulary.envelope import Envelope, Post
from mtaplugin.vocabulary.job import JobContext

if TYPE_CHECKING:
    from mtaplugin.wiring import World

log = logging.getLogger(__name__)

#: articles one list gates in one poll at most (the rest wait for the next poll)
MAX_PER_POLL = 500


@dataclass
class Poll:
    """What one poll of one list did."""

    list_id: str
    newsgroup: str
    #: articles posted to the list (whatever the list then decided: sent, held, refused)
    gated: int = 0
    #: articles skipped: loops, malformed, gone
    skipped: int = 0
    #: why the poll stopped early ("" when it got to the group's end)
    stopped: str = ""
    #: the first poll of the group: the watermark was set, nothing gated
    started: bool = False


class _Watermark:
    def __init__(self, pk: int, newsgroup: str, number: int) -> None:
        self.pk = pk
        self.newsgroup = newsgroup
        self.number = number

    def claim(self, conn: Connection, number: int, now: datetime) -> bool:
        """Move the watermark to ``number`` if it is still where this poll read it."""
        result = conn.execute(
            update(NewsWatermark)
            .where(
                NewsWatermark.mailing_list_id == self.pk,
                NewsWatermark.newsgroup == self.newsgroup,
                NewsWatermark.last_number == self.number,
            )
            .values(last_number=number, updated_at=now)
        )
        if result.rowcount != 1:
            return False
        self.number = number
        return True


def _read(engine: ListEngine, pk: int) -> NewsWatermark | None:
    with session_scope(engine.sessions) as s:
        row = s.get(NewsWatermark, pk)
        if row is not None:
            s.expunge(row)
        return row


def _start(engine: ListEngine, pk: int, newsgroup: str, last: int, now: datetime) -> None:
    """The list's first poll of ``newsgroup``: the watermark at its last article."""
    try:
        with session_scope(engine.sessions) as s:
            row = s.get(NewsWatermark, pk, with_for_update=True)
            if row is None:
                s.add(
                    NewsWatermark(
                        mailing_list_id=pk, newsgroup=newsgroup, last_number=last, updated_at=now
                    )
                )
            elif row.newsgroup != newsgroup:
                row.newsgroup, row.last_number, row.updated_at = newsgroup, last, now
    except IntegrityError:
        pass  # another runner started it at the same moment


def _sender(post: Post) -> str:
    return post.from_address


def _outcome(verdict: Verdict) -> str:
    if isinstance(verdict, Reject):
        return "refused"
    if isinstance(verdict, Accept | Discard):
        names = sorted({type(o).__name__.lower() for o in verdict.outcomes})
        return ",".join(names) or "decided"
    return "deferred"


def poll(
    mlist: MailingList,
    server: Callable[[], NewsServer],
    engine: ListEngine,
    now: datetime,
    limit: int = MAX_PER_POLL,
) -> Poll:
    """Gate the new articles of ``mlist``'s linked newsgroup (one session with the
    server).  The list must gate news to mail (``gateway_to_mail`` and a group)."""
    pk, list_id, group = mlist.id, mlist.list_id, mlist.linked_newsgroup.strip()
    outcome = Poll(list_id, group)
    if not (mlist.gateway_to_mail and group):
        outcome.stopped = _("the list does not gate a newsgroup to mail")
        return outcome
    try:
        with server() as news:
            status = news.group(group)
            row = _read(engine, pk)
            if row is None or row.newsgroup != group:
                _start(engine, pk, group, status.last, now)
                outcome.started = True
                log.info(
                    "%s: first poll of %s, gating after article %d", list_id, group, status.last
                )
                return outcome
            mark = _Watermark(pk, group, row.last_number)
            number = max(mark.number + 1, status.first)
            while number <= status.last and outcome.gated + outcome.skipped < limit:
                if not _gate_one(news, mlist, mark, number, engine, now, outcome):
                    return outcome
                number = mark.number + 1
    except NewsError as exc:
        outcome.stopped = str(exc)
        if exc.temporary:
            log.warning(
                "%s: %s: news server unavailable, trying next time: %s", list_id, group, exc
            )
        else:
            log.error("%s: %s: news server refused: %s", list_id, group, exc)
    except TryLater as exc:
        outcome.stopped = str(exc)
        log.warning("%s: %s: database unavailable, trying next time: %s", list_id, group, exc)
    return outcome


def _gate_one(
    news: NewsServer,
    mlist: MailingList,
    mark: _Watermark,
    number: int,
    engine: ListEngine,
    now: datetime,
    outcome: Poll,
) -> bool:
    """Gate or skip article ``number``; False when the poll must stop."""
    list_id, group = mlist.list_id, mark.newsgroup
    raw = news.article(number)
    verdict: Verdict | None
    if raw is None:
        found: bytes | Skip = Skip(_("no such article"), malformed=False)
    else:
        found = inspect(raw, mlist)
    if isinstance(found, Skip):

        def skip(conn: Connection) -> bool:
            return mark.claim(conn, number, now)

        with connection_scope(engine.db) as conn:
            claimed = skip(conn)
        if not claimed:
            outcome.stopped = _("another runner is gating this list")
            return False
        level = logging.WARNING if found.malformed else logging.INFO
        log.log(level, "%s: %s article %d skipped: %s", list_id, group, number, found.why)
        outcome.skipped += 1
        return True
    post = Post(found)
    envelope = Envelope(
        mail_from=_sender(post),
        recipients=[mlist.fqdn_listname],
        queue_id=f"news:{group}:{number}",
        gated_from=group,
    )
    verdict = engine.decide_claimed(lambda conn: mark.claim(conn, number, now), envelope, found)
    if verdict is None:
        outcome.stopped = _("another runner is gating this list")
        return False
    if isinstance(verdict, TempFail):
        outcome.stopped = verdict.reply.text
        log.warning(
            "%s: %s article %d not gated now, trying next time: %s",
            list_id,
            group,
            number,
            verdict.reply.text,
        )
        return False
    log.info(
        "%s: %s article %d %s gated: %s",
        list_id,
        group,
        number,
        post.message_id,
        _outcome(verdict),
    )
    outcome.gated += 1
    return True


def gating_lists(engine: ListEngine) -> list[MailingList]:
    with session_scope(engine.sessions) as s:
        query = select(MailingList).where(
            MailingList.gateway_to_mail.is_(True), MailingList.linked_newsgroup != ""
        )
        found = list(s.scalars(query.order_by(MailingList.id)))
        for m in found:
            s.expunge(m)
        return found


def gate_all(engine: ListEngine, server: Callable[[], NewsServer], now: datetime) -> list[Poll]:
    return [poll(m, server, engine, now) for m in gating_lists(engine)]


def run(ctx: JobContext[World]) -> int:
    from mtaplugin.wiring import list_engine

    settings = ctx.world.settings
    if not settings.nntp.host:
        return 0  # the gateway is off for the whole site
    engine = list_engine(ctx.world)
    try:
        polls = gate_all(engine, lambda: connect(settings), ctx.now)
    finally:
        engine.close()  # writes the lists' post counts
    return sum(p.gated for p in polls)
