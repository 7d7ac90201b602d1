"""Jobs that end what waited too long: pending requests past their token's life, and held
posts older than their list's ``max_days_to_hold``."""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import select

from mtaplugin.db import session_scope
from mtaplugin.errors import NotFound
from mtaplugin.manage import held, pending
from mtaplugin.model import HeldMessage, MailingList
from mtaplugin.vocabulary.job import JobContext

log = logging.getLogger(__name__)

#: who the audit log names for a post the scheduler discarded
HOLD_EXPIRY_ACTOR = "mtaplugin:hold-expiry"


def expire_pending(ctx: JobContext) -> int:
    """Remove every pending request whose token has expired.  Mailman's task runner evicts
    them the same way and tells nobody: the requester learns it only if they use the token
    (``no pending request has this token (or it has expired)``), and may simply ask again.
    The count is logged."""
    with session_scope(ctx.world.sessions) as session:
        removed = pending.expire(session, ctx.now)
    if removed:
        log.info("pending-expiry: %d expired pending request(s) removed", removed)
    return removed


def expire_holds(ctx: JobContext) -> int:
    """Discard every held post older than its list's ``max_days_to_hold`` (0: kept until
    a moderator acts), each with its audit entry in its own transaction; the poster is not
    told (Mailman 2.1's ``checkdbs`` did not tell them either)."""
    with session_scope(ctx.world.sessions) as session:
        lists = session.execute(
            select(MailingList.id, MailingList.max_days_to_hold).where(
                MailingList.max_days_to_hold > 0
            )
        ).all()
        old: list[tuple[int, int]] = []
        for list_id, days in lists:
            cutoff = ctx.now - timedelta(days=days)
            old.extend(
                (list_id, held_id)
                for held_id in session.scalars(
                    select(HeldMessage.id)
                    .where(HeldMessage.mailing_list_id == list_id, HeldMessage.hold_date < cutoff)
                    .order_by(HeldMessage.id)
                )
            )
    discarded = 0
    for list_id, held_id in old:
        with session_scope(ctx.world.sessions) as session:
            mlist = session.get(MailingList, list_id)
            if mlist is None:
                continue
            try:
                held.discard(
                    held.Moderator(session, mlist, HOLD_EXPIRY_ACTOR, ctx.world.clock),
                    held_id,
                    reason=f"held longer than max_days_to_hold ({mlist.max_days_to_hold} days)",
                )
            except NotFound:
                continue  # a moderator acted on it meanwhile
            discarded += 1
    if discarded:
        log.info("hold-expiry: %d held post(s) discarded", discarded)
    return discarded
