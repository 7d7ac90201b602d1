"""Forgetting a person (the GDPR's right to erasure), on the site admin's decision.

:func:`plan` says what would go; :func:`forget` does it, in the caller's transaction (one
failure, and nothing changed):

- their pending requests go, and their held posts are discarded;
- their memberships go, every role, members through the unsubscription workflow (the
  owners' notice as each list says; no goodbye to the forgotten person unless asked);
- their bounce records, last-digest and autoresponse records go; their user (with its
  preferences and password) and their addresses (with theirs) go;
- in the audit log their addresses are replaced by a pseudonym, the same each time (an
  HMAC of the address with the site's secret), so that entries about one person still
  read as one person;
- with ``archive="remove"`` their archived posts are removed (the permalinks answer 410),
  with ``archive="anonymise"`` their address and name in them are replaced by the
  pseudonym, with ``archive="keep"`` (the default) the archive is left as it is;
- an audit entry records who asked, and the pseudonym.

Bans that name them are kept: a ban is the site's decision to keep an address out."""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from mtaplugin.archive import removal
from mtaplugin.enums import MemberRole
from mtaplugin.errors import InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import held as held_posts
from mtaplugin.manage import members
from mtaplugin.manage.people.person import (
    Person,
    address_pattern,
    audit_entries,
    find,
    list_names,
)
from mtaplugin.manage.subscriptions import DEFAULTS, WorkflowSettings
from mtaplugin.manage.subscriptions.steps import audit
from mtaplugin.manage.subscriptions.unsubscribe import unsubscribe
from mtaplugin.model import (
    Address,
    AuditEntry,
    AutoResponseRecord,
    Ban,
    BounceEvent,
    HeldMessage,
    MailingList,
    Member,
    OneLastDigest,
    PendingRequest,
)
from mtaplugin.model.archive import ArchivedMessage


class ArchiveChoice(StrEnum):
    keep = "keep"
    remove = "remove"
    anonymise = "anonymise"


def parse_archive(value: str) -> ArchiveChoice:
    text = value.strip().lower().replace("anonymize", "anonymise")
    try:
        return ArchiveChoice(text)
    except ValueError:
        raise InvalidInput.not_one_of(
            "archive", _("unknown choice {value!r}; choose one of: {choices}"), value, ArchiveChoice
        ) from None


def pseudonym(secret: bytes, email: str) -> str:
    """The stable stand-in for ``email``: the same secret and address give the same one."""
    digest = hmac.new(secret, b"mtaplugin-forget\0" + email.lower().encode(), hashlib.sha256)
    return f"forgotten-{digest.hexdigest()[:20]}@invalid"


@dataclass
class Plan:
    """What forgetting a person removes or changes."""

    person: Person
    #: (list, role, email) of every membership
    memberships: list[tuple[str, str, str]] = field(default_factory=list)
    pending_requests: int = 0
    #: (list, subject) of every held post
    held_posts: list[tuple[str, str]] = field(default_factory=list)
    bounce_events: int = 0
    audit_entries: int = 0
    #: (list, subject) of every archived post still there
    archived_posts: list[tuple[str, str]] = field(default_factory=list)
    bans_kept: int = 0

    def counts(self) -> dict[str, int]:
        return {
            "addresses": len(self.person.addresses),
            "users": 1 if self.person.user is not None else 0,
            "memberships": len(self.memberships),
            "pending_requests": self.pending_requests,
            "held_posts": len(self.held_posts),
            "bounce_events": self.bounce_events,
            "audit_entries": self.audit_entries,
            "archived_posts": len(self.archived_posts),
            "bans_kept": self.bans_kept,
        }

    def lines(self, archive: ArchiveChoice) -> list[str]:
        """What would go, one line each, for a person to read."""
        out = [_("address {email}").format(email=a.email) for a in self.person.addresses]
        if self.person.user is not None:
            out.append(_("user {id} with its preferences").format(id=self.person.user.user_id))
        out += [
            _("{role} of {list} ({email})").format(role=role, list=name, email=email)
            for name, role, email in self.memberships
        ]
        out += [
            _("held post on {list}: {subject}").format(list=name, subject=subject)
            for name, subject in self.held_posts
        ]
        if self.pending_requests:
            out.append(_("{n} pending requests").format(n=self.pending_requests))
        if self.bounce_events:
            out.append(_("{n} bounce records").format(n=self.bounce_events))
        if self.audit_entries:
            out.append(
                _("{n} audit entries: the address replaced by a pseudonym").format(
                    n=self.audit_entries
                )
            )
        if archive is ArchiveChoice.keep:
            if self.archived_posts:
                out.append(
                    _("{n} archived posts are kept (--archive remove or anonymise)").format(
                        n=len(self.archived_posts)
                    )
                )
        else:
            words = (
                _("archived post removed from {list}: {subject}")
                if archive is ArchiveChoice.remove
                else _("archived post anonymised on {list}: {subject}")
            )
            out += [words.format(list=n, subject=s) for n, s in self.archived_posts]
        if self.bans_kept:
            out.append(_("{n} bans are kept").format(n=self.bans_kept))
        return out


def plan(session: Session, email: str) -> Plan:
    """What :func:`forget` would do; :class:`NotFound` when the site holds nothing."""
    person = find(session, email)
    emails = person.emails
    names = list_names(session)
    result = Plan(person)
    for role, mail, list_pk in session.execute(
        select(Member.role, Address.email, Member.mailing_list_id)
        .join(Address, Address.id == Member.address_id)
        .where(Address.email.in_(emails))
        .order_by(Member.mailing_list_id, Member.role)
    ):
        result.memberships.append((names[list_pk], role.value, mail))
    result.pending_requests = len(
        list(session.scalars(select(PendingRequest.id).where(PendingRequest.email.in_(emails))))
    )
    result.held_posts = [
        (names[pk], subject)
        for pk, subject in session.execute(
            select(HeldMessage.mailing_list_id, HeldMessage.subject)
            .where(HeldMessage.sender.in_(emails))
            .order_by(HeldMessage.id)
        )
    ]
    result.bounce_events = len(
        list(session.scalars(select(BounceEvent.id).where(BounceEvent.email.in_(emails))))
    )
    result.audit_entries = len(audit_entries(session, emails))
    result.archived_posts = [
        (names[pk], subject)
        for pk, subject in session.execute(
            select(ArchivedMessage.mailing_list_id, ArchivedMessage.subject)
            .where(ArchivedMessage.sender.in_(emails), ArchivedMessage.removed.is_(False))
            .order_by(ArchivedMessage.id)
        )
    ]
    result.bans_kept = len(list(session.scalars(select(Ban.id).where(Ban.email.in_(emails)))))
    counts = result.counts()
    if not any(v for k, v in counts.items() if k != "bans_kept"):
        raise NotFound(
            "email", _("this site holds nothing about {email}").format(email=person.email)
        )
    return result


def _replace(value: Any, pattern: re.Pattern[str], names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(lambda m: names[m.group(0).lower()], value)
    if isinstance(value, list):
        return [_replace(v, pattern, names) for v in value]
    if isinstance(value, dict):
        return {k: _replace(v, pattern, names) for k, v in value.items()}
    return value


def _anonymise(msg: ArchivedMessage, pattern: re.Pattern[str], names: dict[str, str]) -> None:
    stand_in = names.get(msg.sender.lower(), "")
    raw = msg.raw.decode("utf-8", "surrogateescape")
    text = msg.text
    if len(msg.sender_name) >= 2:
        name = re.compile(re.escape(msg.sender_name), re.IGNORECASE)
        raw = name.sub(stand_in, raw)
        text = name.sub(stand_in, text)
    msg.raw = _replace(raw, pattern, names).encode("utf-8", "surrogateescape")
    msg.text = _replace(text, pattern, names)
    msg.sender = stand_in
    msg.sender_name = ""


def forget(
    session: Session,
    email: str,
    *,
    secret: bytes,
    actor: str,
    archive: ArchiveChoice = ArchiveChoice.keep,
    send_goodbye_message: bool = False,
    settings: WorkflowSettings = DEFAULTS,
) -> Plan:
    """Forget the person ``email`` names (see the module); returns what went."""
    done = plan(session, email)
    person = done.person
    emails = person.emails
    now = settings.now()
    lists = {m.id: m for m in session.scalars(select(MailingList))}
    # pending requests first: a pending unsubscription must not stop the removal
    session.execute(delete(PendingRequest).where(PendingRequest.email.in_(emails)))
    for held in list(session.scalars(select(HeldMessage).where(HeldMessage.sender.in_(emails)))):
        by = held_posts.Moderator(session, lists[held.mailing_list_id], actor, settings.clock)
        held_posts.discard(by, held.id, "forgotten")
    data = {"send_goodbye_message": send_goodbye_message, "send_admin_notice": None}
    rows = session.execute(
        select(Member.role, Member.mailing_list_id, Address.email)
        .join(Address, Address.id == Member.address_id)
        .where(Address.email.in_(emails))
    ).all()
    for role, list_pk, mail in rows:
        mlist = lists[list_pk]
        if role is MemberRole.member:
            unsubscribe(session, mlist, mail, data, actor, settings)
        else:
            members.remove(session, mlist, mail, role)
            audit(session, mlist, actor, "member.remove", mail, now, role=role.value)
    for model in (BounceEvent, OneLastDigest, AutoResponseRecord):
        session.execute(delete(model).where(model.email.in_(emails)))
    posts = list(
        session.scalars(
            select(ArchivedMessage).where(
                ArchivedMessage.sender.in_(emails), ArchivedMessage.removed.is_(False)
            )
        )
    )
    names = {e: pseudonym(secret, e) for e in emails}
    pattern = address_pattern(emails)
    if archive is ArchiveChoice.remove:
        by_list: dict[int, set[str]] = {}
        for msg in posts:
            by_list.setdefault(msg.mailing_list_id, set()).add(msg.sender)
        for list_pk, senders in by_list.items():
            for sender in sorted(senders):
                removal.remove_author(session, lists[list_pk], sender, now)
    elif archive is ArchiveChoice.anonymise:
        for msg in posts:
            _anonymise(msg, pattern, names)
    if person.user is not None:
        from mtaplugin.manage import users

        users.delete(session, person.user)
    for address in person.addresses:
        session.delete(address)
    session.flush()
    for entry in audit_entries(session, emails):
        entry.actor = _replace(entry.actor, pattern, names)
        entry.detail = _replace(entry.detail, pattern, names)
    session.add(
        AuditEntry(
            actor=actor,
            action="person.forget",
            mailing_list_id=None,
            at=now,
            detail={
                "person": sorted(names.values()),
                "archive": archive.value,
                "removed": done.counts(),
            },
        )
    )
    session.flush()
    return done
