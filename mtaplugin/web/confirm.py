"""Subscribe and unsubscribe without a password: a token mailed to the address.

The page stores a :class:`PendingRequest` (a ``secrets`` token, 3 days) and queues a
notice with the confirmation link through the outbox; opening the link shows a button, and
its POST does the change (a GET alone changes nothing: mail scanners follow links).
A list whose subscription policy asks for moderation keeps the confirmed request pending
for its moderators (step ``moderator``).  The answer on the page is the same whether the
address is a member or not, so that the page does not tell who is subscribed.
"""

from __future__ import annotations

import contextlib
import secrets
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbound
from mtaplugin.addresses import normalize_email
from mtaplugin.errors import AlreadyExists, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import members
from mtaplugin.model import AuditEntry, MailingList, PendingRequest
from mtaplugin.model.base import utcnow
from mtaplugin.model.enums import MemberRole, RequestType, SubscriptionPolicy

LIFETIME = timedelta(days=3)


def request_change(
    session: Session,
    mlist: MailingList,
    email: str,
    kind: RequestType,
    base_url: str,
    display_name: str = "",
) -> PendingRequest:
    addr = normalize_email(email)
    pending = PendingRequest(
        token=secrets.token_urlsafe(32),
        request_type=kind,
        mailing_list_id=mlist.id,
        email=addr,
        display_name=display_name[:255],
        step="confirm",
        expires_at=utcnow() + LIFETIME,
    )
    session.add(pending)
    session.flush()
    link = f"{base_url.rstrip('/')}/confirm/{pending.token}"
    if kind is RequestType.subscription:
        subject = _("Confirm your subscription to {list}")
        body = _(
            "Someone (hopefully you) asked to subscribe {email} to {list}.\n\n"
            "To confirm, open this link and press the button:\n\n    {link}\n\n"
            "If you did not ask for this, ignore this message.\n"
        )
    else:
        subject = _("Confirm that you leave {list}")
        body = _(
            "Someone (hopefully you) asked to unsubscribe {email} from {list}.\n\n"
            "To confirm, open this link and press the button:\n\n    {link}\n\n"
            "If you did not ask for this, ignore this message.\n"
        )
    raw = notices.build(
        mlist.request_address,
        addr,
        subject.format(list=mlist.fqdn_listname),
        body.format(email=addr, list=mlist.fqdn_listname, link=link),
    )
    outbound.enqueue(
        session, mlist.bounces_address, [addr], raw, kind="notice", mailing_list_id=mlist.id
    )
    return pending


def find(session: Session, token: str) -> PendingRequest | None:
    pending = session.scalar(select(PendingRequest).where(PendingRequest.token == token))
    if pending is None or pending.step != "confirm":
        return None
    if pending.expires_at < utcnow():
        return None
    if pending.request_type not in (RequestType.subscription, RequestType.unsubscription):
        return None
    return pending


def confirm(session: Session, pending: PendingRequest) -> str:
    """Carry out a confirmed request; returns what happened, for the page."""
    mlist = session.get(MailingList, pending.mailing_list_id)
    if mlist is None:
        session.delete(pending)
        return _("The list does not exist any more.")
    email = pending.email
    if pending.request_type is RequestType.subscription:
        if mlist.subscription_policy in (
            SubscriptionPolicy.moderate,
            SubscriptionPolicy.confirm_then_moderate,
        ):
            pending.step = "moderator"
            pending.token = secrets.token_urlsafe(32)
            return _("Thank you; a moderator of {list} will look at your request.").format(
                list=mlist.fqdn_listname
            )
        with contextlib.suppress(AlreadyExists):
            members.add(session, mlist, email, display_name=pending.display_name)
        action, text = "member.subscribe", _("{email} is now a member of {list}.")
    else:
        with contextlib.suppress(NotFound):
            members.remove(session, mlist, email, MemberRole.member)
        action, text = "member.unsubscribe", _("{email} is not a member of {list} any more.")
    session.add(
        AuditEntry(
            actor=email,
            action=action,
            mailing_list_id=mlist.id,
            detail={"email": email, "via": "web confirmation"},
        )
    )
    session.delete(pending)
    session.flush()
    return text.format(email=email, list=mlist.fqdn_listname)
