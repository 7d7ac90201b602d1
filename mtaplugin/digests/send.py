"""Sending a list's digest: build it from the store, put it in the outbox, advance the
issue number -- in the caller's one transaction.

- :func:`send` sends what waits, now (``mtaplugin digests send``, REST ``send``, the
  periodic job).
- :func:`add_post` keeps an accepted post for the digest and sends the digest when the
  store passes ``digest_size_threshold`` KiB; the engine calls it in the post's own
  transaction.
- :func:`bump` advances ``volume``/``next_digest_number`` as Mailman's
  ``bump_digest_number_and_volume`` does.
- :func:`send_periodic`: the periodic job ``digests``, every :data:`PERIODIC_EVERY`
  (Mailman's ``mailman digests --periodic`` cron).

**Exactly once.**  The entries a digest was built from are deleted in the transaction
that enqueues the digest, and the delete must remove every one of them: if another
process sent them meanwhile, the delete finds fewer rows and the transaction is rolled
back (:class:`DigestRace`), so a post never goes out in two digests; and until the
transaction commits, nothing is in the outbox, so a kill -9 leaves the post in the store
for the next digest.  Once committed, the outbox delivers it (its own crash rules).

One digest is built per kind (MIME, plain, summary) and language among the digest
members, each one outbox row for all its members -- or, when the list gives one-click
unsubscribe links, one copy per member made as it leaves (as for posts).  The envelope
sender is the list's -bounces address; the worker DKIM-signs and ARC-seals each copy.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from mtaplugin import outbox
from mtaplugin.copies import paths
from mtaplugin.db import session_scope
from mtaplugin.digests import build, store
from mtaplugin.digests.build import DigestPost, Issue, Texts
from mtaplugin.enums import DeliveryMode, DigestFrequency
from mtaplugin.errors import TryLater
from mtaplugin.i18n import _
from mtaplugin.lists import roster
from mtaplugin.lists.language import language_of
from mtaplugin.mailauth.service import SealInfo
from mtaplugin.model import DigestEntry, Domain, MailingList
from mtaplugin.notices.templates import render
from mtaplugin.vocabulary.job import JobContext
from mtaplugin.vocabulary.own_copy import OwnCopyInfo

log = logging.getLogger(__name__)

MASTHEAD = "list:member:digest:masthead"
HEADER = "list:member:digest:header"
FOOTER = "list:member:digest:footer"

#: how often the periodic job sends what waits (the job ``digests``; the web tells a member
#: the date a digest goes out by at the latest from it)
PERIODIC_EVERY = timedelta(days=1)


class DigestRace(TryLater):
    """Another process sent some of the posts this digest was built from."""


@dataclass(frozen=True)
class Sent:
    """What one send did."""

    list_id: str
    #: the issue sent (None: nothing was sent)
    issue: Issue | None = None
    #: the posts it held (or that were dropped, with no digest member to get them)
    posts: int = 0
    recipients: int = 0
    outbox_ids: tuple[int, ...] = ()
    #: why nothing was sent ("" when a digest went out)
    note: str = ""
    dropped: int = 0
    kinds: dict[str, int] = field(default_factory=dict)


def listinfo_url(session: Session, mlist: MailingList) -> str:
    base_url = session.scalar(select(Domain.base_url).where(Domain.mail_host == mlist.mail_host))
    return f"{base_url.rstrip('/')}/lists/{mlist.list_id}/" if base_url else ""


def texts(session: Session, mlist: MailingList, language: str, listinfo: str) -> Texts:
    """The masthead, header and footer in ``language`` (stored overrides first)."""

    def one(name: str) -> str:
        return render(name, language, session=session, mlist=mlist, listinfo_uri=listinfo)

    return Texts(language, one(MASTHEAD), one(HEADER), one(FOOTER))


def bump(mlist: MailingList, now: datetime) -> None:
    """Mailman's ``bump_digest_number_and_volume``: a new volume (issue 1) when the
    period of ``digest_volume_frequency`` changed since the last digest, else the next
    issue; and the time of this digest.  (Quarters are Jan-Mar, Apr-Jun...: Mailman's
    ``(month - 1) // 4`` makes three a year.)"""
    last = mlist.digest_last_sent_at
    freq = mlist.digest_volume_frequency
    if last is None:
        new_volume = False
    elif freq is DigestFrequency.yearly:
        new_volume = now.year > last.year
    elif freq is DigestFrequency.monthly:
        new_volume = now.year * 12 + now.month > last.year * 12 + last.month
    elif freq is DigestFrequency.quarterly:
        new_volume = now.year * 4 + (now.month - 1) // 3 > last.year * 4 + (last.month - 1) // 3
    elif freq is DigestFrequency.weekly:
        this, then = now.isocalendar(), last.isocalendar()
        new_volume = (this.year, this.week) > (then.year, then.week)
    else:  # daily
        new_volume = now.date() > last.date()
    if new_volume:
        mlist.volume += 1
        mlist.next_digest_number = 1
    else:
        mlist.next_digest_number += 1
    mlist.digest_last_sent_at = now


def send(
    session: Session,
    mlist: MailingList,
    now: datetime,
    *,
    secret_key: str = "",
    listinfo: str | None = None,
) -> Sent:
    """Send ``mlist``'s digest of what waits, in ``session``'s transaction (the caller
    commits).  With no digest member, the waiting posts are dropped, as Mailman does, and
    no issue number is used."""
    entries = store.entries(session, mlist.id)
    last = store.one_last(session, mlist.id)
    for owed in last:  # they get this digest, then no more
        session.delete(owed)
    if not entries:
        return Sent(mlist.list_id, note=_("no post is waiting for a digest"))
    ids = [e.id for e in entries]
    # Posts kept while the list had digests on go to its digest members even if the
    # owner has turned digests off since (those members got no regular copy of them).
    members = roster.digest_recipients(session, mlist.id, any_list=True)
    known = {m.email for m in members}
    # One last digest each, in the kind they left last (a member may leave digests twice
    # before the digest goes out: two rows, in the order they came).
    last_kind = {r.email: r.delivery_mode for r in last if r.email not in known}
    members += [
        roster.DigestRecipient(email, mode, language_of(session, mlist, email))
        for email, mode in last_kind.items()
    ]
    if not members:
        _remove(session, ids)
        return Sent(
            mlist.list_id,
            posts=len(ids),
            dropped=len(ids),
            note=_(
                "the list has no digest member: the {n} posts waiting were dropped "
                "(its members got them as regular posts)"
            ).format(n=len(ids)),
        )
    listinfo = listinfo_url(session, mlist) if listinfo is None else listinfo
    issue = Issue(mlist.volume, mlist.next_digest_number, now)
    posts = [DigestPost.of(e.raw, mlist.subject_prefix) for e in entries]
    groups: dict[tuple[DeliveryMode, str], list[str]] = defaultdict(list)
    for m in members:
        groups[(m.mode, m.language)].append(m.email)
    # Build every digest before writing anything.
    made: list[tuple[DeliveryMode, list[str], bytes]] = []
    rendered: dict[str, Texts] = {}
    for (mode, language), emails in sorted(groups.items()):
        if language not in rendered:
            rendered[language] = texts(session, mlist, language, listinfo)
        raw = build.build(mode, mlist, issue, rendered[language], posts, listinfo)
        made.append((mode, emails, raw))
    _remove(session, ids)
    own = paths.one_click(listinfo, secret_key)
    personalize = (
        OwnCopyInfo(mlist.list_id, listinfo, mlist.leave_address, digest=True).as_record()
        if own
        else None
    )
    out: list[int] = []
    kinds: dict[str, int] = defaultdict(int)
    for mode, emails, raw in made:
        queued = outbox.enqueue(
            session,
            mlist.bounces_address,
            emails,
            raw,
            kind="digest",
            mailing_list_id=mlist.id,
            personalize=personalize,
            seal=SealInfo(mlist.mail_host),
            # due at once on the outbox worker's own clock (not the run's, which a test
            # may have moved)
        )
        out.append(queued)
        kinds[mode.value] += len(emails)
    bump(mlist, now)
    session.flush()
    log.info(
        "sent %s digest vol %d issue %d: %d posts to %d members",
        mlist.list_id,
        issue.volume,
        issue.number,
        len(posts),
        len(members),
    )
    return Sent(mlist.list_id, issue, len(posts), len(members), tuple(out), kinds=dict(kinds))


def _remove(session: Session, ids: Sequence[int]) -> None:
    """Delete the entries a digest was made from; all of them, or none (a race)."""
    removed = 0
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        result = session.execute(
            delete(DigestEntry).where(DigestEntry.id.in_(chunk)),
            execution_options={"synchronize_session": False},
        )
        removed += int(getattr(result, "rowcount", 0) or 0)
    if removed != len(ids):
        raise DigestRace(
            _("another process sent this digest meanwhile; nothing was sent twice, try again")
        )


def threshold_passed(size: int, threshold_kib: int) -> bool:
    """The store is full enough to send (``0`` KiB: no size threshold, as in Mailman 2.1)."""
    return threshold_kib > 0 and size >= threshold_kib * 1024


def add_post(
    session: Session,
    list_pk: int,
    archive_copy: bytes,
    *,
    message_id: str,
    sender: str,
    subject: str,
    now: datetime,
    threshold_kib: int,
    listinfo: str,
    secret_key: str,
) -> Sent | None:
    """Keep an accepted post for the digest (in the post's transaction) and send the
    digest when the store passes the list's size threshold; what was sent, or None."""
    store.add(
        session,
        list_pk,
        archive_copy,
        message_id=message_id,
        sender=sender,
        subject=subject,
        now=now,
    )
    if not threshold_passed(store.size(session, list_pk), threshold_kib):
        return None
    mlist = session.get(MailingList, list_pk)
    if mlist is None:  # pragma: no cover -- the post's own list
        return None
    return send(session, mlist, now, secret_key=secret_key, listinfo=listinfo)


def send_periodic(ctx: JobContext) -> int:
    """The lists with ``digest_send_periodic`` and posts waiting each send their digest,
    each in its own transaction; how many digests went out."""
    world = ctx.world
    with session_scope(world.sessions) as session:
        waiting = store.lists_waiting(session)
    sent = 0
    for pk in waiting:
        try:
            with session_scope(world.sessions) as session:
                mlist = session.get(MailingList, pk)
                if mlist is None or not mlist.digest_send_periodic:
                    continue
                done = send(session, mlist, ctx.now, secret_key=world.settings.site.secret_key)
                sent += 1 if done.issue is not None else 0
        except DigestRace:
            log.info("list %d: its digest was sent by another process", pk)
    return sent
