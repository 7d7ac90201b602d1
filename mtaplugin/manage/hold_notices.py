"""A held post's notices, made by the worker after the SMTP answer.

The decision stores a held post with ``notices_due`` set (migration 0049) and answers;
rendering the notices, making the moderators' token and queueing both in the outbox
waited before under SQLite's one write lock, inside the answer.  :func:`send_batch`
takes the held posts that wait, oldest first, and for each, in **one transaction**:

- the moderators' notice (``list:admin:action:post``, when the list's
  ``admin_immed_notify`` is on): to the owners and moderators, else the site owner, with
  a moderation token in its Reply-To (``list-confirm+TOKEN@``);
- the poster's notice (``list:user:notice:hold``, when ``respond_to_post_requests`` is
  on): only to a From: address that was authenticated when the post came in (else it is
  backscatter), and within ``replies.max_autoresponses_per_day``;
- ``notices_due`` cleared.

So a kill anywhere leaves the flag and none of the notices, and the next batch makes them
once.  Two workers on one PostgreSQL take different posts (``FOR UPDATE SKIP LOCKED``).
A post released, rejected or discarded before its turn is gone, and nobody is told of
it.  The worker runs a batch about every :data:`POLL_SECONDS`
(:func:`mtaplugin.worker.run`), so the notices are queued that long after the 250.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import cast

from sqlalchemy import Table, bindparam, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import notices, outbox
from mtaplugin.clock import Clock, system_clock
from mtaplugin.config import Settings
from mtaplugin.db import engine_of, session_scope
from mtaplugin.lists.language import language_of
from mtaplugin.manage import lists, pending
from mtaplugin.manage.held import token_for
from mtaplugin.model import HeldMessage, MailingList
from mtaplugin.notices.templates import overrides_kept
from mtaplugin.posting.verdict import Reason
from mtaplugin.vocabulary.loops import between_batches, keep_running

log = logging.getLogger(__name__)

#: held posts one batch takes at most
BATCH = 50
#: seconds of rendering after which a batch takes no more posts: the rendering reads
#: only, and the writes that follow (a few statements a post) hold SQLite's write lock
#: for a few milliseconds
BUDGET = 0.1
#: the pause when no held post waits for its notices (seconds)
POLL_SECONDS = 0.25
#: the pause after the database failed (seconds)
RETRY_SECONDS = 1.0

_DUE = select(HeldMessage).where(HeldMessage.notices_due.is_(True)).order_by(HeldMessage.id)
_HELD_TABLE = cast(Table, HeldMessage.__table__)
_HELD = _HELD_TABLE.c
_TAKE = (
    update(_HELD_TABLE)
    .where(_HELD.id == bindparam("held_id"), _HELD.notices_due.is_(True))
    .values(notices_due=False)
)


@dataclass(frozen=True)
class NoticePolicy:
    """What the notices of a held post read from the site's settings."""

    #: gets the moderators' notice of a list with no owner or moderator
    site_owner: str = ""
    #: how long the moderators' token is valid (``[tokens] moderator_request_life``)
    moderator_life: timedelta = timedelta(days=180)
    #: ``replies.max_autoresponses_per_day``: the poster's notices a day, at most
    max_autoresponses_per_day: int = 1
    clock: Clock = system_clock

    @classmethod
    def of(cls, settings: Settings, clock: Clock = system_clock) -> NoticePolicy:
        return cls(
            site_owner=settings.site.site_owner,
            moderator_life=pending.Lifetimes.from_settings(settings).moderator,
            max_autoresponses_per_day=settings.replies.max_autoresponses_per_day,
            clock=clock,
        )


def waiting(session: Session) -> int:
    """How many held posts wait for their notices."""
    query = select(func.count(HeldMessage.id)).where(HeldMessage.notices_due.is_(True))
    return int(session.scalar(query) or 0)


def send_batch(
    sessions: sessionmaker[Session],
    policy: NoticePolicy,
    *,
    limit: int = BATCH,
    budget: float = BUDGET,
) -> int:
    """Make the notices of the oldest ``limit`` held posts that wait (fewer when
    ``budget`` runs out), in one transaction; how many posts were done.

    The notices are rendered first, reading only (each list, its staff and its stored
    texts looked up once a batch), and then written in a burst: on SQLite the first write
    takes the one write lock, which the decisions wait for until the commit."""
    with session_scope(sessions) as session, overrides_kept():
        due = session.scalars(_DUE.limit(limit).with_for_update(skip_locked=True)).all()
        batch = _Batch(session, policy)
        started = time.monotonic()
        made: list[tuple[HeldMessage, _Notice | None]] = []
        for held in due:
            if made and time.monotonic() - started > budget:
                break
            made.append(batch.moderators_notice(held))
        return sum(batch.write(held, notice) for held, notice in made)


def send_all(sessions: sessionmaker[Session], policy: NoticePolicy) -> int:
    """Make every waiting held post's notices now (``mtaplugin worker --once``, tests)."""
    total = 0
    while done := send_batch(sessions, policy):
        total += done
    return total


def keep_sending(
    sessions: sessionmaker[Session], policy: NoticePolicy, stop: threading.Event
) -> None:
    """The worker's loop, until ``stop`` is set: a batch, another at once while posts wait
    (on SQLite after :data:`~mtaplugin.vocabulary.loops.SQLITE_YIELD_SECONDS`, the decisions'
    turn for the write lock), else a pause of :data:`POLL_SECONDS`."""
    between = between_batches(engine_of(sessions).dialect.name)
    keep_running(
        lambda: send_batch(sessions, policy) > 0,
        "hold notices",
        stop,
        poll=POLL_SECONDS,
        retry=RETRY_SECONDS,
        between=between,
    )


def send(session: Session, held: HeldMessage, policy: NoticePolicy) -> bool:
    """Clear ``held``'s flag and queue its notices, in ``session``'s transaction; False when
    the post was gone or done meanwhile (on SQLite the batch's rows are read before its
    first write takes the lock: a moderator may have decided the post in between)."""
    batch = _Batch(session, policy)
    return batch.write(*batch.moderators_notice(held))


@dataclass
class _Notice:
    """The moderators' notice of a held post, rendered, and its token (not stored yet)."""

    mlist: MailingList
    to: list[str]
    token: str
    raw: bytes


class _Batch:
    """What one batch looks up once: each list, its staff."""

    def __init__(self, session: Session, policy: NoticePolicy) -> None:
        self.session = session
        self.policy = policy
        self._lists: dict[int, MailingList | None] = {}
        self._staff: dict[int, list[str]] = {}

    def mailing_list(self, pk: int) -> MailingList | None:
        if pk not in self._lists:
            self._lists[pk] = self.session.get(MailingList, pk)
        return self._lists[pk]

    def staff(self, mlist: MailingList) -> list[str]:
        if mlist.id not in self._staff:
            self._staff[mlist.id] = lists.staff(self.session, mlist, self.policy.site_owner)
        return self._staff[mlist.id]

    def moderators_notice(self, held: HeldMessage) -> tuple[HeldMessage, _Notice | None]:
        """``held`` and its moderators' notice (None: the list sends none), rendered
        with a new token, nothing written."""
        mlist = self.mailing_list(held.mailing_list_id)
        if mlist is None or not mlist.admin_immed_notify:
            return held, None
        to = self.staff(mlist)
        if not to:
            return held, None
        # The moderators may answer the notice: its Reply-To carries their token.
        token = pending.new_token()
        # From the list's -bounces address, as every Mailman notice about a list (a
        # moderator whose address bounces is then seen by the list's bounce processing).
        raw = notices.moderator_hold_notice(
            mlist,
            held.id,
            held.sender,
            held.subject,
            _reasons(held),
            held.raw,
            token=token,
            session=self.session,
            message_id=held.message_id,
        )
        return held, _Notice(mlist, to, token, raw)

    def write(self, held: HeldMessage, notice: _Notice | None) -> bool:
        """Take ``held`` (clear its flag), store the token and queue the notices; False
        when the post was gone or taken meanwhile."""
        session, policy = self.session, self.policy
        if not session.connection().execute(_TAKE, {"held_id": held.id}).rowcount:
            return False
        if notice is not None:
            token_for(session, held, policy.moderator_life, policy.clock, token=notice.token)
            outbox.list_notice(session, notice.mlist, notice.to, notice.raw, policy.clock())
        mlist = self.mailing_list(held.mailing_list_id)
        if mlist is not None:
            # (rendered here, in the burst: it goes only to an authenticated poster, within
            # a daily budget that this transaction counts and records)
            tell_poster(session, mlist, held, _reasons(held), policy)
        return True


def _reasons(held: HeldMessage) -> tuple[Reason, ...]:
    return tuple(Reason(str(rule), str(text)) for rule, text in held.reasons)


def tell_poster(
    session: Session,
    mlist: MailingList,
    held: HeldMessage,
    reasons: tuple[Reason, ...],
    policy: NoticePolicy,
) -> None:
    """``list:user:notice:hold`` to the poster: only to an authenticated From: (its
    ``sender_signals``), in the poster's language."""
    if not mlist.respond_to_post_requests or not held.sender_signals or not held.sender:
        return
    now = policy.clock()
    if not notices.may_respond(
        session, mlist.id, held.sender, "hold", policy.max_autoresponses_per_day, now
    ):
        return
    poster = notices.Poster(
        mlist, held.sender, held.subject, language_of(session, mlist, held.sender), session
    )
    outbox.list_notice(
        session, mlist, [held.sender], notices.poster_hold_notice(poster, reasons), now
    )
