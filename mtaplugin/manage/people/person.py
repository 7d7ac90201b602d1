"""Who a person is: the address asked about, and when it belongs to a user, every address
of that user; the rows that name them are found by these addresses."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from sqlalchemy import ColumnElement, String, cast, or_, select
from sqlalchemy.orm import Session

from mtaplugin.model import Address, AuditEntry, MailingList, User
from mtaplugin.vocabulary.addresses import normalize_email


@dataclass(frozen=True)
class Person:
    #: the address asked about, normalised
    email: str
    #: every address of the person (the user's, or the one asked about), sorted
    emails: tuple[str, ...]
    addresses: tuple[Address, ...]
    user: User | None


def find(session: Session, email: str) -> Person:
    """The person ``email`` names (raises InvalidInput for a malformed address).  The
    person may have no Address row (a nonmember whose post was held or archived)."""
    addr = normalize_email(email)
    address = session.scalar(select(Address).where(Address.email == addr))
    user = address.user if address is not None else None
    if user is not None:
        addresses = tuple(
            session.scalars(
                select(Address).where(Address.user_id == user.id).order_by(Address.email)
            )
        )
    elif address is not None:
        addresses = (address,)
    else:
        addresses = ()
    emails = tuple(sorted({addr, *(a.email for a in addresses)}))
    return Person(email=addr, emails=emails, addresses=addresses, user=user)


def audit_naming(emails: tuple[str, ...]) -> ColumnElement[bool]:
    """Audit entries whose actor or detail holds one of ``emails`` (a text search of the
    JSON detail, the same on SQLite and PostgreSQL)."""
    detail = cast(AuditEntry.detail, String)
    clauses: list[ColumnElement[bool]] = []
    for email in emails:
        clauses.append(AuditEntry.actor.icontains(email, autoescape=True))
        clauses.append(detail.icontains(email, autoescape=True))
    return or_(*clauses)


def address_pattern(emails: tuple[str, ...]) -> re.Pattern[str]:
    """One of ``emails`` as a whole address (``ann@x.org`` is not in ``joann@x.org``),
    in any case."""
    words = "|".join(re.escape(e) for e in sorted(emails, key=len, reverse=True))
    return re.compile(rf"(?<![\w.+-])(?:{words})(?![\w-]|\.\w)", re.IGNORECASE)


def audit_entries(session: Session, emails: tuple[str, ...]) -> list[AuditEntry]:
    """The audit entries that name one of ``emails``, oldest first."""
    if not emails:
        return []
    pattern = address_pattern(emails)
    found = session.scalars(select(AuditEntry).where(audit_naming(emails)).order_by(AuditEntry.id))
    return [
        entry
        for entry in found
        if pattern.search(entry.actor)
        or pattern.search(json.dumps(entry.detail, ensure_ascii=False))
    ]


def list_names(session: Session) -> dict[int, str]:
    """Every list's address by its id: what a person's rows (memberships, held posts,
    archived posts) are shown with."""
    return {
        pk: f"{name}@{host}"
        for pk, name, host in session.execute(
            select(MailingList.id, MailingList.list_name, MailingList.mail_host)
        )
    }
