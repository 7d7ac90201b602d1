"""``pending-reminders``, Mailman's ``mailman notify``: once a day, the owners and
moderators of every list with held posts or (un)subscription requests awaiting a moderator
get ``list:admin:notice:pending`` with their number, whatever ``admin_immed_notify`` says
(that is the point: moderators who turned the notice of each hold off still hear once a
day).

A list's reminder and the record that it was sent (an
:class:`~mtaplugin.model.AutoResponseRecord` of kind ``pending-reminder``) are committed
together, one list at a time, so that a run cut short and run again does not remind a list
twice the same day.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbox
from mtaplugin.db import session_scope
from mtaplugin.enums import TokenOwner
from mtaplugin.i18n import _
from mtaplugin.manage import lists, pending
from mtaplugin.model import AutoResponseRecord, HeldMessage, MailingList, PendingRequest
from mtaplugin.notices.templates import rendered
from mtaplugin.vocabulary.job import JobContext

log = logging.getLogger(__name__)

EVERY = timedelta(days=1)
#: the kind of the record that marks a list reminded
KIND = "pending-reminder"


def waiting_counts(session: Session, now: datetime) -> Counter[int]:
    """Per list id: its held posts plus its live (un)subscription requests that wait for a
    moderator."""
    counts: Counter[int] = Counter()
    for list_id, n in session.execute(
        select(HeldMessage.mailing_list_id, func.count()).group_by(HeldMessage.mailing_list_id)
    ):
        counts[list_id] += n
    for of_list, n in session.execute(
        select(PendingRequest.mailing_list_id, func.count())
        .where(
            PendingRequest.token_owner == TokenOwner.moderator,
            PendingRequest.request_type.in_(list(pending.MEMBERSHIP)),
            PendingRequest.expires_at > now,
            PendingRequest.mailing_list_id.is_not(None),
        )
        .group_by(PendingRequest.mailing_list_id)
    ):
        if of_list is not None:
            counts[of_list] += n
    return counts


def reminded_since(session: Session, mlist: MailingList, since: datetime) -> bool:
    found = session.scalar(
        select(AutoResponseRecord.id).where(
            AutoResponseRecord.mailing_list_id == mlist.id,
            AutoResponseRecord.response_type == KIND,
            AutoResponseRecord.sent_on > since,
        )
    )
    return found is not None


def pending_notice(session: Session, mlist: MailingList, count: int) -> bytes:
    """``list:admin:notice:pending``, from and to the list's -owner address."""
    body, title = rendered(
        "list:admin:notice:pending",
        mlist.preferred_language,
        lambda: _("{count} moderator request(s) waiting on {list}").format(
            count=count, list=mlist.fqdn_listname
        ),
        session=session,
        mlist=mlist,
        count=count,
    )
    return notices.build(mlist.owner_address, mlist.owner_address, title, body)


def remind(ctx: JobContext) -> int:
    """Send each list's reminder; how many lists were reminded."""
    site_owner = ctx.world.settings.site.site_owner
    # A list reminded in the last half period was reminded by this period's run already.
    since = ctx.now - EVERY / 2
    with session_scope(ctx.world.sessions) as session:
        counts = waiting_counts(session, ctx.now)
    sent = 0
    for list_id, count in sorted(counts.items()):
        with session_scope(ctx.world.sessions) as session:
            mlist = session.get(MailingList, list_id)
            if mlist is None or reminded_since(session, mlist, since):
                continue
            to = lists.staff(session, mlist, site_owner)
            if not to:
                continue
            outbox.list_notice(session, mlist, to, pending_notice(session, mlist, count), ctx.now)
            session.add(
                AutoResponseRecord(
                    email=mlist.owner_address,
                    mailing_list_id=mlist.id,
                    response_type=KIND,
                    sent_on=ctx.now,
                )
            )
            sent += 1
    if sent:
        log.info("pending-reminders: %d list(s) reminded", sent)
    return sent
