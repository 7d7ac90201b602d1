"""A bounce that reached ``list-bounces[+…]@``, decided at end of message.

Called by the engine (:func:`mtaplugin.engine.persist.persist`) in the decision's own
transaction: the bounce events and the forwarded notice are written with it, and the
``-bounces`` recipient is removed from the transaction (nothing is delivered to a
mailbox).

Whose bounce it is (:func:`decide`, pure):

1. **The VERP address** (``list-bounces+anne=example.org@``) names the member; the DSN's
   own failure for that address (else its first failure) says what kind of bounce it
   is.  A message to a VERP address that names no failure counts only when it looks
   like a non-delivery report (``multipart/report``, or from a mailer daemon); an
   auto-reply (a vacation message sent back to the return path) is ignored.
2. **A probe's token** (``list-bounces+TOKEN@``): the pending probe request names the
   member; the event is recorded with ``context = probe``.
3. Otherwise **the DSN's recipients** (Original-Recipient, Final-Recipient, or what
   flufl.bounce finds) that are *members* of this list -- role ``member`` only: owners
   and moderators have no delivery to disable, nonmembers no score.

A message that is no report (neither ``multipart/report`` nor from a mailer daemon) and
came from a sender other than ``<>`` (RFC 5321 §4.5.5: bounces are sent from the null
sender) names nobody, whatever flufl.bounce's heuristics find in its text: it is
forwarded as unrecognized (an auto-reply is ignored).

Only an address that is a member of *this* list records an event: a DSN naming a member
of another list (forged, or misdirected) records nothing for that member.

Outcomes of what is not a member's bounce:

* ``process_bounces`` off: ignored with a log line, as Mailman 3's bounce runner does
  (it drops the bounce before reading it).
* no recipient found, or none a member of the list: forwarded where
  ``forward_unrecognized_bounces_to`` says (the list's owners and moderators, the site
  owner, or nowhere), rendered from ``list:admin:notice:unrecognized`` with the bounce
  attached, and kept as an event with no address (``processed`` already: there is
  nothing to score) and the bounce itself.
* an auto-reply: ignored with a log line.

Size: the list's ``max_message_size`` is a posting rule and never refuses a bounce (a DSN
quotes the post it returns, so a DSN for a post near the limit is over it); the whole
bounce is read, and what is kept (the event's ``raw``, the forwarded copy) is cut to
that size.  The MTA's own ``message_size_limit`` bounds what arrives at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from mtaplugin import outbox
from mtaplugin.bounces import dsn, verp
from mtaplugin.enums import (
    BounceContext,
    BounceKind,
    MemberRole,
    RequestType,
    UnrecognizedBounceDisposition,
)
from mtaplugin.manage import pending
from mtaplugin.model import BounceEvent
from mtaplugin.notices.unrecognized import unrecognized_bounce_notice
from mtaplugin.posting.snapshot import ListSnapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Bounced:
    """An event to record: a member of the list and the failure their server reported."""

    email: str
    failure: dsn.Failure
    context: BounceContext = BounceContext.normal


@dataclass(frozen=True)
class Decision:
    """What to do with one bounce."""

    events: tuple[Bounced, ...] = ()
    #: forward it where ``forward_unrecognized_bounces_to`` says
    forward: bool = False
    #: for the log line
    why: str = ""


def decide(
    report: dsn.Report,
    is_member: Callable[[str], bool],
    *,
    named: str | None = None,
    probe: bool = False,
    process_bounces: bool = True,
    null_sender: bool = True,
) -> Decision:
    """Whose bounce ``report`` is.  ``named``: the member the return path names (VERP,
    or the probe's request, then ``probe``).  ``null_sender``: it came from ``<>``, as
    RFC 5321 asks of every bounce; a message from a person that is no report either
    (``multipart/report``, a mailer daemon's From:) names nobody, whatever its text says."""
    if not process_bounces:
        return Decision(why="bounce processing is off for the list")
    if not (null_sender or report.is_report):
        if report.auto_reply:
            return Decision(why="an auto-reply, not a bounce")
        return Decision(forward=True, why="not a bounce: no report, and a sender")
    context = BounceContext.probe if probe else BounceContext.normal
    if named is not None:
        if not is_member(named):
            return Decision(forward=True, why=f"the return path names {named}, no member")
        mine = [f for f in report.failures if named in f.addresses] or list(report.failures)
        if mine:
            return Decision((Bounced(named, mine[0], context),))
        if report.auto_reply:
            return Decision(why=f"an auto-reply from {named}, not a bounce")
        if report.is_report:
            unread = dsn.Failure(named, BounceKind.hard, diagnostic="(no reason could be read)")
            return Decision((Bounced(named, unread, context),))
        return Decision(forward=True, why=f"mail to {named}'s return path is no bounce")
    events = []
    strangers = []
    for f in report.failures:
        member = next((a for a in f.addresses if is_member(a)), None)
        if member is None:
            strangers.append(f.email)
        else:
            events.append(Bounced(member, f))
    if events:
        why = f"not members: {', '.join(strangers)}" if strangers else ""
        return Decision(tuple(events), why=why)
    if strangers:
        return Decision(forward=True, why=f"names no member: {', '.join(strangers)}")
    if report.auto_reply:
        return Decision(why="an auto-reply, not a bounce")
    return Decision(forward=True, why="no recipient could be read")


def receive(
    session: Session,
    snap: ListSnapshot,
    extension: str,
    raw: bytes,
    now: datetime,
    site_owner: str = "",
    null_sender: bool = True,
) -> Decision:
    """Decide on the bounce ``raw`` sent to the list's ``-bounces+extension`` address and
    write what it says, in ``session``'s transaction.  ``null_sender``: the envelope
    sender was ``<>``."""
    mlist = snap.mlist
    report = dsn.parse(raw)
    named = verp.member_of(extension) if extension else None
    probe = False
    if extension and named is None and mlist.process_bounces:
        request = pending.find(session, extension, now, mlist=mlist, kinds=[RequestType.probe])
        if request is not None:
            named, probe = request.email.lower(), True
        else:
            log.info("%s: bounce to an unknown or expired token", mlist.list_id)
    decision = decide(
        report,
        lambda email: MemberRole.member in snap.roles_of(email),
        named=named,
        probe=probe,
        process_bounces=mlist.process_bounces,
        null_sender=null_sender,
    )
    for event in decision.events:
        failure = event.failure
        session.add(
            BounceEvent(
                mailing_list_id=snap.pk,
                email=event.email,
                at=now,
                message_id=report.message_id,
                context=event.context,
                kind=failure.kind,
                status=failure.status,
                diagnostic=failure.diagnostic,
                processed=False,
            )
        )
        log.info(
            "%s: %s bounce of %s (%s)",
            mlist.list_id,
            failure.kind.value,
            event.email,
            failure.status or "no status",
        )
    if decision.forward:
        forward(session, snap, report, raw, now, decision.why, site_owner)
    elif decision.why:
        log.info("%s: bounce %s ignored: %s", mlist.list_id, report.message_id, decision.why)
    return decision


def administrators(snap: ListSnapshot, site_owner: str) -> list[str]:
    """Where an unrecognized bounce of the list goes (none: discarded)."""
    match snap.mlist.forward_unrecognized_bounces_to:
        case UnrecognizedBounceDisposition.administrators:
            return list(snap.staff or ((site_owner,) if site_owner else ()))
        case UnrecognizedBounceDisposition.site_owner:
            return [site_owner] if site_owner else []
    return []


def forward(
    session: Session,
    snap: ListSnapshot,
    report: dsn.Report,
    raw: bytes,
    now: datetime,
    why: str,
    site_owner: str,
) -> None:
    """Keep the unrecognized bounce, and send it where the list says."""
    mlist = snap.mlist
    kept = dsn.cut(raw, mlist.max_message_size * 1024)
    first = report.failures[0] if report.failures else None
    to = administrators(snap, site_owner)
    # The notice is made before anything is written: on SQLite the first write takes the
    # one write lock, which the other decisions then wait for until the commit.
    notice = unrecognized_bounce_notice(session, mlist, kept) if to else b""
    session.add(
        BounceEvent(
            mailing_list_id=snap.pk,
            email="",
            at=now,
            message_id=report.message_id,
            kind=first.kind if first else BounceKind.hard,
            status=first.status if first else "",
            diagnostic=f"unrecognized: {why}",
            # nothing to score: no member of the list is named
            processed=True,
            raw=kept,
        )
    )
    if not to:
        log.info("%s: unrecognized bounce %s discarded: %s", mlist.list_id, report.message_id, why)
        return
    # A null envelope sender: a notice about a bounce must not bounce back to -bounces.
    outbox.enqueue(session, "", to, notice, kind="notice", mailing_list_id=snap.pk, now=now)
    log.info(
        "%s: unrecognized bounce %s forwarded to %s: %s",
        mlist.list_id,
        report.message_id,
        ", ".join(to),
        why,
    )
