"""The archivers' queue: archived posts waiting for an external archiver, and the
``archivers`` job that hands them over.

A post is queued (one row per archiver the list hands it to) in the transaction that
archived it -- the decision's, or the release's -- never handed over during the SMTP
transaction.  The job hands over the due rows:

- ``mail-archive``: the copy goes into the outbox and the row is deleted, in one
  transaction (a kill -9 leaves one or the other, never both nor neither);
- ``hyperkitty`` and ``mhonarc``: the post goes to HyperKitty / the command, then its row
  is deleted in its own transaction.  A run killed between the two hands it over again on
  the next run (HyperKitty keeps one copy per Message-ID; a command should do the same,
  as MHonArc's ``-add`` does).

Retries (:mod:`mtaplugin.vocabulary.retry`, the queue of :mod:`mtaplugin.outbox.handoff`,
as the news queue): a temporary failure
(HyperKitty down or answering 5xx, the command exiting non-zero) keeps the row and sets its
next attempt a minute later, doubling up to an hour; a post still not taken five days after
it was queued, or one refused for good, is marked failed with the error, logged, and kept.
An archiver the site no longer enables keeps its rows waiting (and, after five days,
failed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import archivers, outbox
from mtaplugin.archivers import hyperkitty, pipe
from mtaplugin.config import ArchiversSettings
from mtaplugin.db import session_scope
from mtaplugin.mailauth.service import SealInfo
from mtaplugin.model import ArchiverHandOff, MailingList
from mtaplugin.outbox import handoff
from mtaplugin.vocabulary.job import JobContext
from mtaplugin.vocabulary.retry import GIVE_UP_AFTER, backoff

log = logging.getLogger(__name__)

#: rows one run hands over at most (the rest wait for the next run)
BATCH = 500

#: hands ``raw`` of ``mlist`` to an archiver that is not reached by mail (raises
#: HandOffError when it did not take it)
Deliver = Callable[[ArchiversSettings, MailingList, bytes], None]


QUEUE = handoff.Queue(
    ArchiverHandOff, "archivers", lambda row: f"post {row.id} for {row.archiver}", log
)

#: how many hand-offs wait (failed ones not counted)
waiting = QUEUE.waiting


def enqueue(
    session: Session, mlist: MailingList, raw: bytes, now: datetime, site: ArchiversSettings
) -> list[ArchiverHandOff]:
    """Queue the archive copy ``raw`` for each external archiver the list hands its posts
    to, in the caller's transaction."""
    rows: list[ArchiverHandOff] = [
        QUEUE.new_row(now, mailing_list_id=mlist.id, archiver=name, message=raw)
        for name in archivers.handed_to(mlist, site)
    ]
    session.add_all(rows)
    return rows


def mail_archive_send(
    session: Session, site: ArchiversSettings, mlist: MailingList, raw: bytes, now: datetime
) -> None:
    """mail-archive.com's copy: queued for the archive's address, in the caller's
    transaction, due at ``now``."""
    outbox.enqueue(
        session,
        mlist.bounces_address,
        [site.mail_archive_recipient.strip()],
        raw,
        kind="archiver",
        mailing_list_id=mlist.id,
        seal=SealInfo(mlist.mail_host),
        now=now,
    )


def to_hyperkitty(site: ArchiversSettings, mlist: MailingList, raw: bytes) -> None:
    url = hyperkitty.archive(site, mlist.posting_address, raw)
    log.info("archivers: HyperKitty archived a post of %s at %s", mlist.list_id, url)


def to_command(site: ArchiversSettings, mlist: MailingList, raw: bytes) -> None:
    pipe.run(site.mhonarc_command, mlist, raw, site.mhonarc_timeout)


DELIVER: dict[str, Deliver] = {
    archivers.HYPERKITTY: to_hyperkitty,
    archivers.MHONARC: to_command,
}


def hand_over_due(
    sessions: sessionmaker[Session],
    site: ArchiversSettings,
    now: datetime,
    deliver: dict[str, Deliver] | None = None,
) -> int:
    """Hand over the rows due at ``now`` of the archivers the site enables; how many."""
    deliver = DELIVER if deliver is None else deliver
    on = [name for name, yes in archivers.site_enabled(site).items() if yes]
    with session_scope(sessions) as session:
        due: list[tuple[int, str]] = [
            (row_id, name)
            for row_id, name in handoff.due(
                session,
                ArchiverHandOff,
                now,
                BATCH,
                ArchiverHandOff.archiver.in_(on),
                columns=(ArchiverHandOff.id, ArchiverHandOff.archiver),
            )
        ]
        _give_up_stale(session, on, now)
    done = 0
    down: set[str] = set()  # archivers found down in this run: their rows wait
    for row_id, name in due:
        if name in down:
            QUEUE.failed_try(sessions, row_id, "tried later", True, now)
            continue
        if name == archivers.MAIL_ARCHIVE:
            with session_scope(sessions) as session:
                row = session.get(ArchiverHandOff, row_id)
                mlist = session.get(MailingList, row.mailing_list_id) if row else None
                if row is None or mlist is None or row.failed:
                    continue
                mail_archive_send(session, site, mlist, row.message, now)
                session.delete(row)
            done += 1
            continue
        hand_over = deliver.get(name)
        if hand_over is None:
            continue
        tried = QUEUE.hand_over(sessions, row_id, _post, _giving(hand_over, site), now)
        if tried.server_down and name == archivers.HYPERKITTY:
            down.add(name)  # HyperKitty is in trouble: its other posts wait with it
        done += int(tried.taken)
    return done


def _giving(
    hand_over: Deliver, site: ArchiversSettings
) -> Callable[[tuple[MailingList, bytes]], None]:
    return lambda post: hand_over(site, *post)


def _post(session: Session, row: ArchiverHandOff) -> tuple[MailingList, bytes] | None:
    """The row's list (detached, for the hand-off outside the transaction) and post."""
    mlist = session.get(MailingList, row.mailing_list_id)
    if mlist is None:
        return None
    session.expunge(mlist)
    return mlist, row.message


def _give_up_stale(session: Session, on: list[str], now: datetime) -> None:
    """Rows of an archiver the site does not enable (any more) fail when too old."""
    stale = session.scalars(
        select(ArchiverHandOff).where(
            ArchiverHandOff.failed.is_(False),
            ArchiverHandOff.archiver.not_in(on),
            ArchiverHandOff.queued_at <= now - GIVE_UP_AFTER,
        )
    )
    for row in stale:
        row.failed = True
        row.last_error = f"the site does not enable the {row.archiver} archiver"
        log.error("archivers: post %d for %s given up: %s", row.id, row.archiver, row.last_error)


def run(ctx: JobContext) -> int:
    return hand_over_due(ctx.world.sessions, ctx.world.settings.archivers, ctx.now)


__all__ = ["backoff", "enqueue", "hand_over_due", "waiting"]
