"""The fan-out of one accepted post, in the drain's transaction: the archive copy is made
(the transforms up to the archive's fields, as the members' copy had them), then

- the built-in archive keeps it (:func:`mtaplugin.archive.store.archive`), when the list
  archives it and has not turned the built-in archive off;
- the external archivers the list hands its posts to get it queued
  (:func:`mtaplugin.archivers.queue.enqueue`);
- the digest store gets it, and the digest goes out when the store passes the list's
  threshold (:func:`mtaplugin.digests.send.add_post`);
- the newsgroup gets its article queued (:func:`mtaplugin.news.queue.enqueue`), when the
  site has a news server and the post did not come from the newsgroup.

**A repeat** -- the same post accepted twice (a sender's retry racing its first try, the
LMTP safety net deciding a post the milter had decided) -- is known by its Message-ID,
which the list's archive holds once (a unique index): the second one goes to none of the
outlets.  Two drains archiving the same Message-ID at the same moment: the second one's
insert fails on the index (:class:`Repeat`), its batch is run again with a savepoint per
post, that post's savepoint is rolled back, and it counts as that repeat.  A list whose
built-in archive is off cannot tell: its outlets may get the post twice, as its members
did (docs/reliability.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from mtaplugin import archivers
from mtaplugin.archive import store as archive_store
from mtaplugin.archivers import queue as archivers_queue
from mtaplugin.config import ArchiversSettings, Settings
from mtaplugin.copies import paths, transforms
from mtaplugin.digests import send as digests
from mtaplugin.model import MailingList
from mtaplugin.news import queue as news_queue
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.vocabulary.envelope import Post


@dataclass(frozen=True)
class Outlets:
    """What the site gives the stage (its settings, read by the worker)."""

    #: the external archivers the site enables ([archivers])
    archivers: ArchiversSettings = field(default_factory=ArchiversSettings)
    #: the site has a news server ([nntp] host): gatewaying lists' posts are queued
    news: bool = False
    #: signs the one-click links of a digest the post fills up (site.secret_key)
    secret_key: str = ""

    @classmethod
    def of(cls, settings: Settings) -> Outlets:
        return cls(settings.archivers, bool(settings.nntp.host), settings.site.secret_key)


@dataclass(frozen=True)
class Entry:
    """One row of the journal, as the drain took it."""

    id: int
    mailing_list_id: int
    origin: str
    raw: bytes
    post_number: int
    topics: tuple[str, ...]
    archive: bool
    digest: bool
    news: bool
    accepted_at: datetime

    @classmethod
    def of(cls, row: Any) -> Entry:
        return cls(
            id=row.id,
            mailing_list_id=row.mailing_list_id,
            origin=row.origin,
            raw=row.raw,
            post_number=row.post_number,
            topics=tuple(row.topics or ()),
            archive=row.archive,
            digest=row.digest,
            news=row.news,
            accepted_at=row.accepted_at,
        )


@dataclass(frozen=True)
class Fanned:
    """What the fan-out of one post did."""

    archived: bool = False
    #: the list's archive held its Message-ID already: no outlet took it again
    repeat: bool = False
    archivers: int = 0
    digest: bool = False
    #: a digest went out with it (the store passed the threshold)
    digest_sent: bool = False
    news: bool = False


#: what says a kept context is still the list's: its name, its creation (a list removed
#: and made again may get the same id) and its generation (moved by triggers on any change
#: of the list, its templates or its roster -- what the SMTP front ends' snapshots trust)
Version = tuple[str, datetime, int]


@dataclass
class Kept:
    """The transforms' contexts a drain keeps across its batches: list id -> (the list's
    version, the site's archivers, the context)."""

    contexts: dict[int, tuple[Version, ArchiversSettings, TransformContext]] = field(
        default_factory=dict
    )


@dataclass
class Contexts:
    """The transforms' context of each list met in a batch: its web address and
    decoration templates are read once per list version (``kept`` across batches), not
    once per post."""

    session: Session
    outlets: Outlets
    kept: Kept = field(default_factory=Kept)
    #: the lists met in the batch, by id: held here, they stay in the session's identity
    #: map (which holds its objects weakly) and are read once per batch, not once per post
    lists: dict[int, MailingList | None] = field(default_factory=dict)

    def mailing_list(self, pk: int) -> MailingList | None:
        if pk not in self.lists:
            self.lists[pk] = self.session.get(MailingList, pk)
        return self.lists[pk]

    def of(self, mlist: MailingList, entry: Entry) -> TransformContext:
        version: Version = (mlist.list_id, mlist.created_at, mlist.generation)
        site = self.outlets.archivers
        found = self.kept.contexts.get(mlist.id)
        if found is not None and found[0] == version and found[1] == site:
            ctx = found[2]
        else:
            ctx = paths.session_context(self.session, mlist, archivers=site)
            self.kept.contexts[mlist.id] = (version, site, ctx)
        # this session's list row (the kept context's is another transaction's)
        return dataclasses.replace(
            ctx, mlist=mlist, post_number=entry.post_number, topics=entry.topics
        )


def fan_out(session: Session, mlist: MailingList, entry: Entry, contexts: Contexts) -> Fanned:
    """Give the accepted post ``entry`` of ``mlist`` to the stage's outlets, in
    ``session``'s transaction."""
    outlets = contexts.outlets
    ctx = contexts.of(mlist, entry)
    archive = transforms.archive_copy(ctx, entry.raw)
    now = entry.accepted_at
    archived = False
    queued = 0
    if entry.archive:
        if archivers.builtin_on(mlist):
            archived = archive_once(session, mlist, archive, now)
            if not archived:
                return Fanned(repeat=True)
        queued = len(archivers_queue.enqueue(session, mlist, archive, now, outlets.archivers))
    sent = None
    if entry.digest:
        post = Post(entry.raw)
        sent = digests.add_post(
            session,
            mlist.id,
            archive,
            message_id=post.message_id,
            sender=post.from_address,
            subject=post.subject,
            now=now,
            threshold_kib=mlist.digest_size_threshold,
            listinfo=ctx.listinfo_url,
            secret_key=outlets.secret_key,
        )
    news = entry.news and outlets.news and news_queue.enqueue(session, mlist, archive, now)
    return Fanned(
        archived=archived,
        archivers=queued,
        digest=entry.digest,
        digest_sent=sent is not None and sent.issue is not None,
        news=bool(news),
    )


class Repeat(Exception):
    """Another transaction archived the post's Message-ID at the same moment (the unique
    index refused this one): the caller rolls back the post's savepoint, and counts it as
    a repeat."""


def archive_once(session: Session, mlist: MailingList, raw: bytes, now: datetime) -> bool:
    """Archive ``raw``; False when the list's archive holds its Message-ID already.  When
    another transaction archived it at the same moment, the unique index refuses the
    second insert: :class:`Repeat` is raised, and the drain runs the batch again with a
    savepoint per post, whose savepoint it rolls back (the archive is the fan-out's first
    write)."""
    try:
        return archive_store.archive(session, mlist, raw, now, check=False) is not None
    except IntegrityError as exc:
        raise Repeat(str(exc)) from exc
