"""One sync of a roster source: read the directory (outside any transaction), decide
(:mod:`.plan`), and apply the changes through the subscription workflow in one
transaction, with the outcome recorded on the source.

- members (role ``member``) join by :func:`~mtaplugin.manage.subscriptions.mass_subscribe`
  and leave by :func:`~mtaplugin.manage.subscriptions.mass_unsubscribe`, as an
  administrator's mass change: bans refused, welcome, goodbye and the owners' notices as
  the list says, an audit entry each;
- owners and moderators are added and removed with an audit entry each (a banned address
  is refused for them too).

Nothing changes when the directory fails, answers nobody, or when the removals are over
the source's bound and ``force`` is not given; the source records why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import session_scope
from mtaplugin.enums import MemberRole
from mtaplugin.i18n import _
from mtaplugin.manage import bans, members
from mtaplugin.manage.subscriptions import WorkflowSettings, mass_subscribe, mass_unsubscribe
from mtaplugin.manage.subscriptions.steps import audit
from mtaplugin.model import Address, MailingList, Member, RosterSource, RosterSourceMember
from mtaplugin.roster_sources import sources
from mtaplugin.roster_sources.directory import DirectoryError
from mtaplugin.roster_sources.plan import Plan, plan, summary

log = logging.getLogger(__name__)

OK = "ok"
ERROR = "error"
REFUSED = "refused"


@dataclass
class SyncReport:
    list_name: str
    role: str
    #: "ok", "error" (the directory failed) or "refused" (empty answer, over the bound)
    result: str
    message: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: address -> why it was not added (banned, the list's own address)
    refused: dict[str, str] = field(default_factory=dict)
    unchanged: int = 0
    skipped: int = 0
    dry_run: bool = False

    @property
    def changed(self) -> int:
        """How many memberships this sync changed (none when refused, failed or dry)."""
        if self.result != OK or self.dry_run:
            return 0
        return len(self.added) + len(self.removed)


def actor_of(source: RosterSource) -> str:
    return f"roster:{source.kind.value}"


def sync(
    sessions: sessionmaker[Session],
    source_id: int,
    settings: WorkflowSettings,
    *,
    force: bool = False,
    dry_run: bool = False,
    actor: str = "",
) -> SyncReport:
    with session_scope(sessions) as session:
        source = _source(session, source_id)
        mlist = session.get_one(MailingList, source.mailing_list_id)
        name, role = mlist.fqdn_listname, source.role.value
        session.expunge(source)
    try:
        answer = sources.read(source)
    except DirectoryError as exc:
        report = SyncReport(name, role, ERROR, str(exc), dry_run=dry_run)
        log.warning("roster sync of %s (%s) failed: %s", name, role, exc)
        return _record(sessions, source_id, report, settings.now())
    if not answer.entries:
        message = _(
            "the directory answered no addresses; nothing changed (a sync never empties a list)"
        )
        report = SyncReport(name, role, REFUSED, message, skipped=answer.skipped, dry_run=dry_run)
        return _record(sessions, source_id, report, settings.now())
    with session_scope(sessions) as session:
        source = _source(session, source_id)
        mlist = session.get_one(MailingList, source.mailing_list_id)
        roster = _roster(session, mlist, source.role)
        managed = _managed(session, source)
        decided = plan(
            answer.entries,
            set(roster),
            {e for e, mid in roster.items() if mid in managed},
            max_removals=source.max_removals,
            max_removal_percent=source.max_removal_percent,
        )
        report = SyncReport(
            name, role, OK, "", unchanged=decided.unchanged, skipped=answer.skipped,
            dry_run=dry_run,
        )  # fmt: skip
        if decided.over_bound and not force:
            report.result = REFUSED
            report.message = _(
                "the directory would remove {n} members, more than this source's bound of "
                "{bound}; nothing changed (sync with --force to remove them)"
            ).format(n=len(decided.removals), bound=decided.bound)
            report.removed = list(decided.removals)
        elif dry_run:
            report.added = [e for e, _n in decided.additions]
            report.removed = list(decided.removals)
            report.refused = _would_refuse(session, mlist, report.added)
            report.added = [e for e in report.added if e not in report.refused]
        else:
            _apply(session, mlist, source, decided, report, settings, actor or actor_of(source))
        if report.result == OK:
            report.message = summary(len(report.added), len(report.removed), report.refused)
        if not dry_run:
            _store(source, report, settings.now())
            if report.changed:
                audit(
                    session, mlist, actor or actor_of(source), "roster.sync", "", settings.now(),
                    role=role, added=len(report.added), removed=len(report.removed),
                )  # fmt: skip
    return report


def _source(session: Session, source_id: int) -> RosterSource:
    return session.get_one(RosterSource, source_id)


def _roster(session: Session, mlist: MailingList, role: MemberRole) -> dict[str, int]:
    rows = session.execute(
        select(Address.email, Member.id)
        .join(Member, Member.address_id == Address.id)
        .where(Member.mailing_list_id == mlist.id, Member.role == role)
    )
    return {email: mid for email, mid in rows}


def _managed(session: Session, source: RosterSource) -> set[int]:
    return set(
        session.scalars(
            select(RosterSourceMember.member_id).where(RosterSourceMember.source_id == source.id)
        )
    )


def _would_refuse(session: Session, mlist: MailingList, emails: list[str]) -> dict[str, str]:
    from mtaplugin.manage.subscriptions.subscribe import is_own_address

    ban_list = bans.ban_list(session, mlist)
    refused: dict[str, str] = {}
    for email in emails:
        if ban_list.matches(email):
            refused[email] = "banned"
        elif is_own_address(mlist, email):
            refused[email] = "list address"
    return refused


def _apply(
    session: Session,
    mlist: MailingList,
    source: RosterSource,
    decided: Plan,
    report: SyncReport,
    settings: WorkflowSettings,
    actor: str,
) -> None:
    emails = [e for e, _n in decided.additions]
    report.refused = _would_refuse(session, mlist, emails)
    if source.role is MemberRole.member:
        if decided.removals:
            gone = mass_unsubscribe(
                session, mlist, decided.removals, actor=actor, settings=settings
            )
            report.removed = [e for e, was in gone.items() if was]
        if decided.additions:
            added = mass_subscribe(
                session, mlist, decided.additions, actor=actor, settings=settings
            )
            report.added = list(added.added)
    else:
        now = settings.now()
        for email in decided.removals:
            members.remove(session, mlist, email, source.role)
            audit(session, mlist, actor, "member.unsubscribe", email, now, role=source.role.value)
            report.removed.append(email)
        for email, name in decided.additions:
            if email in report.refused:
                continue
            members.add(session, mlist, email, source.role, display_name=name, clock=settings.clock)
            audit(session, mlist, actor, "member.subscribe", email, now, role=source.role.value)
            report.added.append(email)
    session.flush()
    if report.added:
        ids = _roster(session, mlist, source.role)
        session.add_all(
            RosterSourceMember(source_id=source.id, member_id=ids[e])
            for e in report.added
            if e in ids
        )
        session.flush()


def _store(source: RosterSource, report: SyncReport, now: datetime) -> None:
    source.last_sync_at = now
    source.last_result = report.result
    source.last_message = report.message
    source.last_added = len(report.added) if report.result == OK else 0
    source.last_removed = len(report.removed) if report.result == OK else 0


def _record(
    sessions: sessionmaker[Session], source_id: int, report: SyncReport, now: datetime
) -> SyncReport:
    """Record a failed or refused sync on the source (not for a dry run): nothing else."""
    if not report.dry_run:
        with session_scope(sessions) as session:
            _store(_source(session, source_id), report, now)
    return report
