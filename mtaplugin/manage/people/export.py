"""Everything the site holds about one person, as one JSON document (the GDPR's right of
access): their addresses and user, every membership with its role and preferences, the
bans that name them, their held posts, pending requests, bounce records, the audit
entries that name them and their archived posts, raw posts included.

A post's bytes are given as text when they are UTF-8 (``"raw_encoding": "text"``),
otherwise in base64 (``"raw_encoding": "base64"``)."""

from __future__ import annotations

import base64
from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.errors import NotFound
from mtaplugin.i18n import _
from mtaplugin.manage.people.person import Person, audit_entries, find, list_names
from mtaplugin.model import (
    Address,
    Ban,
    BounceEvent,
    HeldMessage,
    MailingList,
    Member,
    PendingRequest,
    User,
)
from mtaplugin.model.archive import ArchivedMessage
from mtaplugin.model.preferences import PREFERENCE_KEYS, PreferencesMixin

#: names the document's shape; a new shape gets a new number
FORMAT = "mtaplugin-person/1"


def _value(value: object) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return value


def raw_fields(raw: bytes | None) -> dict[str, Any]:
    """A post's bytes for JSON: text when they decode as UTF-8, else base64."""
    if raw is None:
        return {"raw": None, "raw_encoding": None}
    try:
        return {"raw": raw.decode("utf-8"), "raw_encoding": "text"}
    except UnicodeDecodeError:
        return {"raw": base64.b64encode(raw).decode("ascii"), "raw_encoding": "base64"}


def preferences(row: PreferencesMixin) -> dict[str, Any]:
    """The preferences set on this row (unset ones fall through to the next level)."""
    return {
        key: _value(getattr(row, key)) for key in PREFERENCE_KEYS if getattr(row, key) is not None
    }


def _user(user: User | None) -> dict[str, Any] | None:
    if user is None:
        return None
    return {
        "user_id": user.user_id,
        "display_name": user.display_name,
        "created_on": _value(user.created_on),
        "is_server_owner": user.is_server_owner,
        "has_password": bool(user.password),
        "preferred_address": user.preferred_address.email if user.preferred_address else None,
        "preferences": preferences(user),
        "owns_domains": sorted(d.mail_host for d in user.domains),
    }


def _address(address: Address) -> dict[str, Any]:
    return {
        "email": address.email,
        "original_email": address.original_email,
        "display_name": address.display_name,
        "registered_on": _value(address.registered_on),
        "verified_on": _value(address.verified_on),
        "preferences": preferences(address),
    }


def _memberships(session: Session, person: Person) -> list[dict[str, Any]]:
    rows = session.execute(
        select(Member, Address.email, MailingList.list_name, MailingList.mail_host)
        .join(Address, Address.id == Member.address_id)
        .join(MailingList, MailingList.id == Member.mailing_list_id)
        .where(Address.email.in_(person.emails))
        .order_by(MailingList.mail_host, MailingList.list_name, Member.role, Address.email)
    ).all()
    out = []
    for member, email, name, host in rows:
        out.append(
            {
                "list": f"{name}@{host}",
                "email": email,
                "role": member.role.value,
                "member_id": member.member_id,
                "subscribed_on": _value(member.created_at),
                "display_name": member.display_name,
                "moderation_action": _value(member.moderation_action),
                "preferences": preferences(member),
                "topics": list(member.topics or []),
                "receive_nonmatching_topics": member.receive_nonmatching_topics,
                "bounce_score": member.bounce_score,
                "last_bounce_received": _value(member.last_bounce_received),
                "total_warnings_sent": member.total_warnings_sent,
            }
        )
    return out


def _held(session: Session, person: Person, names: dict[int, str]) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(HeldMessage).where(HeldMessage.sender.in_(person.emails)).order_by(HeldMessage.id)
    )
    return [
        {
            "list": names.get(h.mailing_list_id),
            "request_id": h.id,
            "message_id": h.message_id,
            "sender": h.sender,
            "subject": h.subject,
            "hold_date": _value(h.hold_date),
            "reasons": h.reasons,
            **raw_fields(h.raw),
        }
        for h in rows
    ]


def _pending(session: Session, person: Person, names: dict[int, str]) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(PendingRequest)
        .where(PendingRequest.email.in_(person.emails))
        .order_by(PendingRequest.id)
    )
    return [
        {
            "list": names.get(p.mailing_list_id) if p.mailing_list_id else None,
            "type": p.request_type.value,
            "email": p.email,
            "display_name": p.display_name,
            "step": p.step,
            "created_at": _value(p.created_at),
            "expires_at": _value(p.expires_at),
        }
        for p in rows
    ]


def _bounces(session: Session, person: Person, names: dict[int, str]) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(BounceEvent).where(BounceEvent.email.in_(person.emails)).order_by(BounceEvent.id)
    )
    return [
        {
            "list": names.get(b.mailing_list_id) if b.mailing_list_id else None,
            "email": b.email,
            "at": _value(b.at),
            "message_id": b.message_id,
            "kind": _value(b.kind),
            "context": _value(b.context),
            "status": b.status,
            "diagnostic": b.diagnostic,
            **raw_fields(b.raw),
        }
        for b in rows
    ]


def _bans(session: Session, person: Person, names: dict[int, str]) -> list[dict[str, Any]]:
    rows = session.scalars(select(Ban).where(Ban.email.in_(person.emails)).order_by(Ban.id))
    return [
        {
            "list": names.get(b.mailing_list_id) if b.mailing_list_id else None,
            "email": b.email,
            "created_at": _value(b.created_at),
        }
        for b in rows
    ]


def _archive(session: Session, person: Person, names: dict[int, str]) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(ArchivedMessage)
        .where(ArchivedMessage.sender.in_(person.emails), ArchivedMessage.removed.is_(False))
        .order_by(ArchivedMessage.mailing_list_id, ArchivedMessage.date, ArchivedMessage.id)
    )
    return [
        {
            "list": names.get(m.mailing_list_id),
            "message_id": m.message_id,
            "message_id_hash": m.message_id_hash,
            "sender": m.sender,
            "sender_name": m.sender_name,
            "subject": m.subject,
            "date": _value(m.date),
            "archived_at": _value(m.archived_at),
            **raw_fields(m.raw),
        }
        for m in rows
    ]


def build(session: Session, email: str, now: datetime) -> dict[str, Any]:
    """The document for the person ``email`` names; :class:`NotFound` when the site holds
    nothing about them."""
    person = find(session, email)
    names = list_names(session)
    audit = [
        {
            "at": _value(a.at),
            "actor": a.actor,
            "action": a.action,
            "list": names.get(a.mailing_list_id) if a.mailing_list_id else None,
            "detail": a.detail,
        }
        for a in audit_entries(session, person.emails)
    ]
    doc: dict[str, Any] = {
        "format": FORMAT,
        "exported_at": _value(now),
        "email": person.email,
        "user": _user(person.user),
        "addresses": [_address(a) for a in person.addresses],
        "memberships": _memberships(session, person),
        "bans": _bans(session, person, names),
        "held_posts": _held(session, person, names),
        "pending_requests": _pending(session, person, names),
        "bounce_events": _bounces(session, person, names),
        "audit_entries": audit,
        "archived_posts": _archive(session, person, names),
    }
    if not any(doc[k] for k in doc if k not in ("format", "exported_at", "email")):
        raise NotFound(
            "email", _("this site holds nothing about {email}").format(email=person.email)
        )
    return doc
