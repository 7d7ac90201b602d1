"""A mass (un)subscription sent in chunks (the web page's, which shows a progress bar):
one owners' notice for the whole batch, sent with its last chunk.

The page names its batch with a token of its own in every chunk; each chunk's audit
entries carry it (``detail["batch"]``), and the request of the last chunk sends the owners
one notice naming every address the batch's chunks subscribed (or removed), as Mailman
2.1 sends one for a submission of its mass subscription page.  Only the entries of the
same list, the same actor and the last :data:`BATCH_LIFE` (by the workflow's clock, which
dates the entries) count.
"""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.manage.subscriptions.steps import WorkflowSettings, notify_staff_of
from mtaplugin.model import AuditEntry, MailingList

#: what may name a batch (the page makes a random UUID)
_TOKEN = re.compile(r"[A-Za-z0-9-]{8,64}")
#: how far back the entries of a batch are looked for
BATCH_LIFE = timedelta(days=1)


def batch_token(value: str) -> str:
    """``value`` if it can name a batch, else "" (the chunk then stands alone, with an
    owners' notice of its own)."""
    return value if _TOKEN.fullmatch(value) else ""


def notify_batch(
    session: Session,
    mlist: MailingList,
    settings: WorkflowSettings,
    kind: str,
    batch: str,
    actor: str,
    send_admin_notice: bool | None = None,
) -> list[str]:
    """The owners' notice of batch ``batch`` (``kind`` "subscribe" or "unsubscribe"),
    naming every address its chunks did, if ``send_admin_notice`` (None: the list's
    ``admin_notify_mchanges``) says so; returns the addresses."""
    action = "member.unsubscribe" if kind == "unsubscribe" else "member.subscribe"
    details = session.scalars(
        select(AuditEntry.detail)
        .where(
            AuditEntry.mailing_list_id == mlist.id,
            AuditEntry.action == action,
            AuditEntry.actor == actor,
            AuditEntry.at >= settings.now() - BATCH_LIFE,
            AuditEntry.detail["batch"].as_string() == batch,
        )
        .order_by(AuditEntry.id)
    ).all()
    emails = [str(detail["email"]) for detail in details]
    notify_staff_of(session, mlist, settings, emails, kind, send_admin_notice)
    return emails
