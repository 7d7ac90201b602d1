"""Password reset by mail: a single-use token from the pending-request store, valid one
hour (:attr:`mtaplugin.manage.pending.Lifetimes.password_reset`).

The web's page answers the same whether the address has a user or not (it does not tell
who has an account); at most one link per address goes out every
:data:`~mtaplugin.manage.accounts.RESEND_AFTER`.  The link points at the site's web address,
which the caller passes (:class:`~mtaplugin.manage.accounts.Links`: never the request's host).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from mtaplugin import notices, outbox
from mtaplugin.clock import Clock, system_clock
from mtaplugin.enums import RequestType
from mtaplugin.i18n import _
from mtaplugin.manage import pending, users
from mtaplugin.manage.accounts import Links, link_request
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import AuditEntry, PendingRequest, User

LIFETIMES = pending.Lifetimes()


def request_reset(session: Session, workflow: WorkflowSettings, links: Links, email: str) -> bool:
    """Mail a reset link if ``email`` belongs to a user; True when a mail was queued."""
    user = users.user_by_email(session, email, verified=True)
    if user is None:
        return False
    addr = email.strip().lower()
    request = link_request(
        session,
        workflow,
        RequestType.password_reset,
        addr,
        {"user_id": user.user_id},
        step="reset",
        life=LIFETIMES.password_reset,
    )
    if request is None:
        return False
    link = f"{links.reset()}/{request.token}"
    raw = notices.build(
        workflow.site_owner,
        addr,
        _("Reset your mailing list password"),
        _(
            "Someone (hopefully you) asked to reset the password of {email}.\n\n"
            "To choose a new password, open this link within an hour:\n\n    {link}\n\n"
            "If you did not ask for this, ignore this message; your password stays.\n"
        ).format(email=addr, link=link),
    )
    outbox.enqueue(session, workflow.site_owner, [addr], raw, kind="notice", now=workflow.now())
    return True


def find(session: Session, token: str, clock: Clock = system_clock) -> PendingRequest | None:
    return pending.find(session, token, clock(), kinds=[RequestType.password_reset])


def reset(session: Session, request: PendingRequest, password: str, now: datetime) -> User:
    """Set the new password (raises InvalidInput naming ``password``) and use up the token;
    the audit entry is dated ``now``."""
    user = users.user_by_id(session, str(request.data.get("user_id", "")))
    if user is None:
        user = users.user_by_email(session, request.email)
    if user is None:
        session.delete(request)
        raise LookupError(request.email)
    user.password = users.hash_password(password, users.MIN_PASSWORD)
    session.add(
        AuditEntry(actor=request.email, action="web.password_reset", at=now, detail={"via": "mail"})
    )
    session.delete(request)
    session.flush()
    return user
