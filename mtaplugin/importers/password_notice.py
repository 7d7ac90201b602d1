"""The one mail a moved web account with no password gets (a social log-in on the old
suite: Django marks it with an unusable password): the site moved, and here is how to set
a password.  Sent once per address, whatever the number of import runs: the audit log
records it (``import.password_notice``)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbox
from mtaplugin.i18n import _
from mtaplugin.model import AuditEntry

ACTION = "import.password_notice"


def send_once(session: Session, email: str, site_owner: str, reset_url: str) -> bool:
    """Queue the notice to ``email`` unless it was sent before; whether it was queued."""
    sent = session.scalar(
        select(AuditEntry.id).where(AuditEntry.action == ACTION, AuditEntry.actor == email)
    )
    if sent is not None:
        return False
    where = (
        _("Open {url} and enter this address to choose one.").format(url=reset_url)
        if reset_url
        else _('Use "Forgot your password?" on the log-in page to choose one.')
    )
    body = _(
        "The mailing lists you are on have moved to a new server, and your account with\n"
        "them.  On the old site you logged in through another service, so your account\n"
        "has no password here.\n\n{where}\n\nYour subscriptions stay as they were.\n"
    ).format(where=where)
    raw = notices.build(site_owner, email, _("Set a password for your mailing lists"), body)
    outbox.enqueue(session, site_owner, [email], raw, kind="notice")
    session.add(AuditEntry(actor=email, action=ACTION, detail={"email": email}))
    session.flush()
    return True
