"""The journal of accepted posts (table ``accepted_posts``): how a post enters the stage.

:func:`enter` is called where a post is accepted -- :func:`mtaplugin.engine.persist.deliver_copy`
for every post the engine accepts (milter, LMTP, pipe, Exim, news gated in) and
:func:`mtaplugin.manage.held.approve` for a released one -- in that transaction.  It
writes one row, with one prepared ``INSERT``, and only when one of the stage's outlets
wants the post: a list that neither archives, nor has digest members, nor gateways to
news writes nothing.  On the milter's path (SQLite) the row is written on the decision's
kept connection (:class:`~mtaplugin.lists.kept.KeptTransaction`), with no SQLAlchemy
``Connection`` at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from enum import StrEnum
from typing import cast

from sqlalchemy import Connection, Table, func, insert, select
from sqlalchemy.orm import Session

from mtaplugin.archive.store import archives
from mtaplugin.lists import roster
from mtaplugin.lists.kept import KeptTransaction
from mtaplugin.model import AcceptedPost, MailingList
from mtaplugin.news.outgoing import gateways
from mtaplugin.vocabulary.envelope import Post

JOURNAL = cast(Table, AcceptedPost.__table__)
# Built once: on the milter's path, building a statement costs more than running it
# (inline: the new row's id is not fetched back).
_INSERT = insert(JOURNAL).inline()


class Origin(StrEnum):
    """Where an accepted post came from."""

    #: a post to the list by mail: SMTP (milter), LMTP, the pipe, Exim
    mail = "mail"
    #: a held post a moderator released
    release = "release"
    #: an article gated in from the list's newsgroup (accepted at once or released): it
    #: is never queued back to the newsgroup
    news = "news"


def origin_of(gated_from: str, released: bool = False) -> Origin:
    if gated_from:
        return Origin.news
    return Origin.release if released else Origin.mail


def enter(
    db: Connection | Session | Callable[[], Connection],
    mlist: MailingList,
    post: Post,
    *,
    origin: Origin,
    number: int,
    topics: Sequence[str] = (),
    urgent: bool = False,
    digest_members: bool,
    now: datetime,
) -> bool:
    """Journal the accepted ``post`` of ``mlist`` (its bytes as they came) in ``db``'s
    transaction; whether a row was written.  ``number``: its post number; ``topics``: the
    list's topics it matched; ``urgent``: it went to the digest members already;
    ``digest_members``: the list has members who get digests.  ``db`` may be a function
    that gives the connection: called only when a row is written (a
    :class:`~mtaplugin.lists.kept.KeptTransaction` writes it itself)."""
    archive = archives(mlist, post.headers)
    digest = digest_members and not urgent
    news = gateways(mlist) and origin is not Origin.news
    if not (archive or digest or news):
        return False
    row = {
        "mailing_list_id": mlist.id,
        "origin": origin.value,
        "raw": post.raw,
        "post_number": number,
        "topics": list(topics),
        "archive": archive,
        "digest": digest,
        "news": news,
        "accepted_at": now,
        "failed": False,
        "last_error": "",
    }
    if isinstance(db, KeptTransaction):  # the milter's path on SQLite: no ``Connection``
        db.insert(_INSERT, row)
        return True
    db = db() if callable(db) else db
    if isinstance(db, Session):
        db.execute(_INSERT, row)
    else:  # the milter's path: without SQLAlchemy's execution context
        roster.driver_insert(db, _INSERT, row)
    return True


def waiting(session: Session, mailing_list_id: int | None = None) -> int:
    """How many accepted posts wait for the fan-out (failed ones not counted)."""
    query = select(func.count(AcceptedPost.id)).where(AcceptedPost.failed.is_(False))
    if mailing_list_id is not None:
        query = query.where(AcceptedPost.mailing_list_id == mailing_list_id)
    return int(session.scalar(query) or 0)
