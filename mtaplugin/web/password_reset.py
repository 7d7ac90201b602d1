"""Password reset by mail: a single-use ``secrets`` token, valid one hour.

The page answers the same whether the address has a user or not (it does not tell who has
an account), and mails at most one link per address every :data:`RESEND_AFTER`.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbox
from mtaplugin.config import Settings
from mtaplugin.i18n import _
from mtaplugin.model import AuditEntry, PendingRequest, User
from mtaplugin.model.base import utcnow
from mtaplugin.model.enums import RequestType, TokenOwner
from mtaplugin.web import accounts

LIFETIME = timedelta(hours=1)
RESEND_AFTER = timedelta(minutes=10)


def request_reset(session: Session, settings: Settings, email: str, base_url: str) -> bool:
    """Mail a reset link if ``email`` belongs to a user; True when a mail was queued."""
    user = accounts.user_by_email(session, email)
    if user is None:
        return False
    addr = email.strip().lower()
    recent = session.scalar(
        select(PendingRequest.id).where(
            PendingRequest.request_type == RequestType.password_reset,
            PendingRequest.email == addr,
            PendingRequest.created_at > utcnow() - RESEND_AFTER,
        )
    )
    if recent is not None:
        return False
    pending = PendingRequest(
        token=secrets.token_urlsafe(32),
        request_type=RequestType.password_reset,
        token_owner=TokenOwner.subscriber,
        email=addr,
        step="reset",
        data={"user_id": user.user_id},
        expires_at=utcnow() + LIFETIME,
    )
    session.add(pending)
    session.flush()
    link = f"{base_url.rstrip('/')}/reset/{pending.token}"
    raw = notices.build(
        settings.site.site_owner,
        addr,
        _("Reset your mailing list password"),
        _(
            "Someone (hopefully you) asked to reset the password of {email}.\n\n"
            "To choose a new password, open this link within an hour:\n\n    {link}\n\n"
            "If you did not ask for this, ignore this message; your password stays.\n"
        ).format(email=addr, link=link),
    )
    outbox.enqueue(session, settings.site.site_owner, [addr], raw, kind="notice")
    return True


def find(session: Session, token: str) -> PendingRequest | None:
    pending = session.scalar(select(PendingRequest).where(PendingRequest.token == token))
    if (
        pending is None
        or pending.request_type is not RequestType.password_reset
        or pending.expires_at < utcnow()
    ):
        return None
    return pending


def reset(session: Session, pending: PendingRequest, password: str) -> User:
    """Set the new password (raises InvalidInput naming ``password``) and use up the token."""
    user = accounts.user_by_id(session, str(pending.data.get("user_id", "")))
    if user is None:
        user = accounts.user_by_email(session, pending.email)
    if user is None:
        session.delete(pending)
        raise LookupError(pending.email)
    user.password = accounts.hash_password(password)
    session.add(
        AuditEntry(actor=pending.email, action="web.password_reset", detail={"via": "mail"})
    )
    session.delete(pending)
    session.flush()
    return user
