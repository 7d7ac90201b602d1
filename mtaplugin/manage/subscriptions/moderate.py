"""Moving a waiting request on: the person's confirmation (:func:`confirm`) and the
moderators' decision (:func:`moderate`), whichever way they come (a reply to
``list-confirm+TOKEN@``, ``confirm TOKEN``, the web's confirmation and requests pages,
REST's ``requests`` resources, the CLI)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import outbox
from mtaplugin.enums import RequestType, TokenOwner
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.lists.language import language_of
from mtaplugin.manage import claims, members, pending
from mtaplugin.manage.subscriptions.steps import (
    DEFAULTS,
    AlreadyMember,
    NotAMember,
    Status,
    Step,
    WorkflowSettings,
    ask,
    audit,
    steps_left,
)
from mtaplugin.manage.subscriptions.subscribe import subscribe
from mtaplugin.manage.subscriptions.unsubscribe import unsubscribe
from mtaplugin.model import Address, MailingList, PendingRequest
from mtaplugin.notices import membership

#: what a moderator may do with a request (REST's names; "approve" is an alias of accept)
MODERATOR_ACTIONS = ("accept", "reject", "discard", "defer")


def get_pending(
    session: Session,
    token: str,
    mlist: MailingList | None = None,
    settings: WorkflowSettings = DEFAULTS,
) -> PendingRequest:
    """The live request of ``token`` (on ``mlist``, if given); raises NotFound."""
    return pending.get(session, token, settings.now(), mlist=mlist)


def pending_requests(
    session: Session,
    mlist: MailingList,
    request_type: RequestType | None = None,
    token_owner: TokenOwner | None = None,
    settings: WorkflowSettings = DEFAULTS,
) -> list[PendingRequest]:
    """The live (un)subscription requests of a list, oldest first."""
    kinds = [request_type] if request_type else list(pending.MEMBERSHIP)
    return pending.waiting(session, mlist, settings.now(), kinds, token_owner)


def _finish(
    session: Session,
    mlist: MailingList,
    request: PendingRequest,
    data: dict[str, Any],
    actor: str,
    settings: WorkflowSettings,
) -> Status:
    """The last step of a request whose steps are all done."""
    email = request.email
    if request.request_type is RequestType.subscription:
        if members.is_member(session, mlist, email):
            raise AlreadyMember(email, mlist)
        subscribe(session, mlist, email, request.display_name, data, actor, settings)
        return Status.subscribed
    if not members.is_member(session, mlist, email):
        raise NotAMember(email, mlist)
    unsubscribe(session, mlist, email, data, actor, settings)
    return Status.unsubscribed


def _use(session: Session, request: PendingRequest) -> dict[str, Any]:
    """Use up a token: the request is removed, its data returned."""
    data = dict(request.data)
    session.delete(request)
    session.flush()
    return data


def confirm(
    session: Session,
    mlist: MailingList,
    token: str,
    *,
    actor: str = "",
    settings: WorkflowSettings = DEFAULTS,
) -> tuple[Status, str | None]:
    """The subscriber's confirmation: the token proves the address gets the list's mail.
    Returns the status and, when a moderator's step follows, its (new) token."""
    request = pending.get(session, token, settings.now(), mlist=mlist, kinds=pending.MEMBERSHIP)
    if request.token_owner is not TokenOwner.subscriber or request.step != Step.confirm:
        raise InvalidInput("token", _("this token waits for a moderator, not for you"))
    data = _use(session, request)
    # the confirmation shows the address is the person's: it is verified from now on
    address = members.get_or_create_address(
        session, request.email, request.display_name, clock=settings.clock
    )
    claims.vouch(session, address, settings.now())
    steps = steps_left(data, Step.confirm)
    if steps:
        kind, email = request.request_type, request.email
        return ask(session, mlist, email, kind, steps, data, settings, request.display_name)
    return _finish(session, mlist, request, data, actor or request.email, settings), None


def moderate(
    session: Session,
    mlist: MailingList,
    token: str,
    action: str,
    *,
    actor: str,
    reason: str = "",
    settings: WorkflowSettings = DEFAULTS,
) -> Status:
    """A moderator's decision on a (un)subscription request: accept, reject (the person is
    told, with ``reason``), discard (silently), defer (left waiting)."""
    action = "accept" if action == "approve" else action
    if action not in MODERATOR_ACTIONS:
        raise InvalidInput.not_one_of(
            "action",
            _("unknown action {value!r}; choose one of: {choices}"),
            action,
            MODERATOR_ACTIONS,
        )
    request = pending.get(session, token, settings.now(), mlist=mlist)
    if request.request_type not in pending.MEMBERSHIP:
        raise InvalidInput("token", _("this token is not a subscription request"))
    email, kind = request.email, request.request_type
    what = "subscription" if kind is RequestType.subscription else "unsubscription"
    if action == "defer":
        audit(session, mlist, actor, f"{what}.defer", email, settings.now())
        return Status.deferred
    if action == "accept" and request.step != Step.moderate:
        raise InvalidInput("token", _("this request waits for the person's confirmation first"))
    data = _use(session, request)
    if action == "accept":
        if kind is RequestType.unsubscription and not members.is_member(session, mlist, email):
            return Status.unsubscribed  # gone meanwhile: nothing left to do
        return _finish(session, mlist, request, data, actor, settings)
    audit(session, mlist, actor, f"{what}.{action}", email, settings.now(), reason=reason)
    if action == "reject" and _verified(session, email):
        # Only an address shown to be the person's hears of it: a refusal mailed to an
        # address someone else typed in would be backscatter.
        language = language_of(session, mlist, email, data.get("language"))
        text = reason.strip() or _("no reason was given")
        raw = membership.refused(session, mlist, email, what, text, language)
        outbox.list_notice(session, mlist, [email], raw, settings.now())
    return Status.refused if action == "reject" else Status.discarded


def _verified(session: Session, email: str) -> bool:
    address = session.scalar(select(Address).where(Address.email == email))
    return address is not None and address.verified_on is not None
