"""The outbox: messages mtaplugin itself must send, kept in SQL until the MTA took them.

``enqueue`` adds a row in the caller's transaction (so a held post's notice and the hold
commit together).  ``deliver_due`` submits what is due to the MTA's re-injection listener,
in batches of ``outbound.max_recipients`` recipients, and reschedules failures with
exponential back-off.  A permanent refusal (5xx) of every recipient marks the row failed.
"""

from __future__ import annotations

import logging
import smtplib
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.config import Settings
from mtaplugin.db import session_scope
from mtaplugin.model import OutboxMessage
from mtaplugin.model.base import utcnow
from mtaplugin.model.enums import OutboxStatus

log = logging.getLogger(__name__)

#: first retry after a minute, doubling, at most an hour apart
BACKOFF_FIRST = timedelta(minutes=1)
BACKOFF_MAX = timedelta(hours=1)
#: give up after this long (Mailman's delivery_retry_period)
RETRY_PERIOD = timedelta(days=5)


def enqueue(
    session: Session,
    mail_from: str,
    recipients: list[str],
    raw: bytes,
    kind: str = "notice",
    mailing_list_id: int | None = None,
) -> OutboxMessage:
    row = OutboxMessage(
        mail_from=mail_from,
        recipients=list(recipients),
        raw=raw,
        kind=kind,
        mailing_list_id=mailing_list_id,
    )
    session.add(row)
    session.flush()
    return row


def backoff(attempts: int) -> timedelta:
    return min(BACKOFF_FIRST * (2 ** max(0, attempts - 1)), BACKOFF_MAX)


def _submit(settings: Settings, row: OutboxMessage) -> tuple[list[str], list[str]]:
    """Send one row; return (the recipients still to retry (4xx), those refused with 5xx),
    raising on connection loss."""
    out = settings.outbound
    retry: list[str] = []
    refused_for_good: list[str] = []
    with smtplib.SMTP(out.host, out.port, timeout=out.timeout) as smtp:
        for start in range(0, len(row.recipients), out.max_recipients):
            batch = row.recipients[start : start + out.max_recipients]
            try:
                refused = smtp.sendmail(row.mail_from, batch, row.raw)
            except smtplib.SMTPRecipientsRefused as exc:
                refused = exc.recipients
            except smtplib.SMTPResponseException as exc:
                if 400 <= exc.smtp_code < 500:
                    retry.extend(batch)
                    smtp.rset()
                    continue
                log.warning("outbox %s: %s refused %s", row.id, batch, exc)
                refused_for_good.extend(f"{r} ({exc.smtp_code})" for r in batch)
                continue
            for rcpt, (code, _msg) in refused.items():
                if 400 <= code < 500:
                    retry.append(rcpt)
                else:
                    log.warning("outbox %s: %s refused with %s", row.id, rcpt, code)
                    refused_for_good.append(f"{rcpt} ({code})")
    return retry, refused_for_good


def deliver_due(sessions: sessionmaker[Session], settings: Settings, limit: int = 100) -> int:
    """Submit the due rows; return how many were fully sent."""
    now = utcnow()
    with session_scope(sessions) as session:
        ids = list(
            session.scalars(
                select(OutboxMessage.id)
                .where(
                    OutboxMessage.status == OutboxStatus.queued,
                    OutboxMessage.next_attempt_at <= now,
                )
                .order_by(OutboxMessage.next_attempt_at)
                .limit(limit)
            )
        )
    sent = 0
    for row_id in ids:
        with session_scope(sessions) as session:
            row = session.get(OutboxMessage, row_id)
            if row is None or row.status is not OutboxStatus.queued:
                continue
            row.attempts += 1
            try:
                retry, refused = _submit(settings, row)
                error = ""
            except (OSError, smtplib.SMTPException) as exc:
                retry, refused = list(row.recipients), []
                error = f"{type(exc).__name__}: {exc}"
            if refused:
                row.last_error = "refused: " + ", ".join(refused)
            if not retry and refused and len(refused) == len(row.recipients):
                row.status = OutboxStatus.failed  # every recipient refused for good
            elif not retry:
                row.status = OutboxStatus.sent
                sent += 1
            elif utcnow() - row.created_at > RETRY_PERIOD:
                row.status = OutboxStatus.failed
                row.last_error = error or "recipients still deferred"
            else:
                row.recipients = retry
                row.last_error = error or "some recipients deferred"
                row.next_attempt_at = utcnow() + backoff(row.attempts)
    return sent
