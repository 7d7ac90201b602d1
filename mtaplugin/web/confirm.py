"""Subscribe and unsubscribe without a password: a token mailed to the address.

The page stores a :class:`PendingRequest` (a ``secrets`` token, 3 days) and queues a
notice with the confirmation link through the outbox; opening the link shows a button, and
its POST does the change (a GET alone changes nothing: mail scanners follow links).
A list whose subscription policy asks for moderation keeps the confirmed request pending
for its moderators (step ``moderate``, token owner ``moderator``, a new token), who accept,
reject, discard or defer it on the list's requests page.  The steps and token owners are
those of the email interface's workflow (``manage/subscriptions.py``), so that either can
finish what the other started.  The answer on the page is the same whether the
address is a member or not, so that the page does not tell who is subscribed.
"""

from __future__ import annotations

import contextlib
import secrets
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbox
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import members
from mtaplugin.model import AuditEntry, MailingList, PendingRequest
from mtaplugin.model.base import utcnow
from mtaplugin.model.enums import MemberRole, RequestType, SubscriptionPolicy, TokenOwner
from mtaplugin.posting.addresses import normalize_email

LIFETIME = timedelta(days=3)
MODERATOR_LIFETIME = timedelta(days=180)
CONFIRM = "confirm"
MODERATE = "moderate"
MODERATOR_ACTIONS = ("accept", "reject", "discard", "defer")


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
        step=CONFIRM,
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
    outbox.enqueue(
        session, mlist.bounces_address, [addr], raw, kind="notice", mailing_list_id=mlist.id
    )
    return pending


def find(session: Session, token: str) -> PendingRequest | None:
    pending = session.scalar(select(PendingRequest).where(PendingRequest.token == token))
    if pending is None or pending.step != CONFIRM:
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
            pending.step = MODERATE
            pending.token_owner = TokenOwner.moderator
            pending.token = secrets.token_urlsafe(32)
            pending.expires_at = utcnow() + MODERATOR_LIFETIME
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


def waiting_for_moderators(session: Session, mlist: MailingList) -> list[PendingRequest]:
    return list(
        session.scalars(
            select(PendingRequest)
            .where(
                PendingRequest.mailing_list_id == mlist.id,
                PendingRequest.token_owner == TokenOwner.moderator,
                PendingRequest.step == MODERATE,
                PendingRequest.expires_at > utcnow(),
                PendingRequest.request_type.in_(
                    [RequestType.subscription, RequestType.unsubscription]
                ),
            )
            .order_by(PendingRequest.created_at, PendingRequest.id)
        )
    )


def moderate(
    session: Session, mlist: MailingList, request_id: int, action: str, actor: str, reason: str
) -> PendingRequest:
    """A moderator's decision on a (un)subscription request waiting for them."""
    if action not in MODERATOR_ACTIONS:
        raise InvalidInput(
            "action",
            _("unknown action {action!r}; choose one of: {choices}").format(
                action=action, choices=", ".join(MODERATOR_ACTIONS)
            ),
        )
    pending = next((p for p in waiting_for_moderators(session, mlist) if p.id == request_id), None)
    if pending is None:
        raise NotFound("request_id", _("no request {id} waits here").format(id=request_id))
    kind = "subscription" if pending.request_type is RequestType.subscription else "unsubscription"
    detail = {"email": pending.email, "reason": reason}
    session.add(
        AuditEntry(actor=actor, action=f"{kind}.{action}", mailing_list_id=mlist.id, detail=detail)
    )
    if action == "defer":
        return pending
    if action == "accept" and pending.request_type is RequestType.subscription:
        with contextlib.suppress(AlreadyExists):
            members.add(session, mlist, pending.email, display_name=pending.display_name)
    elif action == "accept":
        with contextlib.suppress(NotFound):
            members.remove(session, mlist, pending.email, MemberRole.member)
    elif action == "reject":
        raw = notices.build(
            mlist.request_address,
            pending.email,
            _("Your request to {list} was refused").format(list=mlist.fqdn_listname),
            _(
                "Your {kind} request for {email} on {list} was refused by a moderator:\n\n"
                "    {reason}\n\nQuestions go to {owner}.\n"
            ).format(
                kind=_(kind),
                email=pending.email,
                list=mlist.fqdn_listname,
                reason=reason.strip() or _("no reason was given"),
                owner=mlist.owner_address,
            ),
        )
        outbox.enqueue(
            session, mlist.bounces_address, [pending.email], raw, mailing_list_id=mlist.id
        )
    session.delete(pending)
    session.flush()
    return pending
