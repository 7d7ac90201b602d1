"""Mailman's REST words for the subscription workflow (:mod:`mtaplugin.manage.subscriptions`,
the one implementation every other way in uses too): nothing but the mapping.  The REST
resources call the workflow themselves, inside :func:`subscription_refusals`, and answer
with :func:`waiting`.

REST answers 201 with the member, or 202 with ``{token, token_owner}``; the workflow's
refusals become Mailman's own texts (scripts match on them).  A moderator's ``accept`` on a
request moves it on by one step, whoever holds the token (Mailman's
``POST /lists/{list}/requests/{token}``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import falcon
from sqlalchemy.orm import Session

from mtaplugin.api.dialect import bad_request, conflict
from mtaplugin.enums import RequestType, TokenOwner
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.manage import pending, subscriptions
from mtaplugin.manage.subscriptions import (
    AlreadyMember,
    AlreadyPending,
    Banned,
    Status,
    WorkflowSettings,
)
from mtaplugin.model import MailingList

#: which token a pending status waits on
_OWNERS = {
    Status.pending_confirmation: TokenOwner.subscriber,
    Status.pending_approval: TokenOwner.moderator,
}


@contextmanager
def subscription_refusals() -> Iterator[None]:
    """The workflow's refusals of a subscription, in Mailman's texts: banned 400, a member
    already or a request pending 409, any other wrong value (the list's own address) 400."""
    try:
        yield
    except Banned:
        raise bad_request(_("Membership is banned")) from None
    except AlreadyMember:
        raise conflict(_("Member already subscribed")) from None
    except AlreadyPending:
        raise conflict(_("Subscription request already pending")) from None
    except InvalidInput as exc:
        raise bad_request(exc.problem) from None


def waiting(resp: falcon.Response, status: Status, token: str | None) -> bool:
    """Answer 202 with the token someone must act on; False (nothing answered) when the
    workflow is done."""
    if token is None or status not in _OWNERS:
        return False
    resp.status = falcon.HTTP_202
    resp.media = {"token": token, "token_owner": _OWNERS[status].value}
    return True


def still_waiting(
    resp: falcon.Response,
    session: Session,
    mlist: MailingList,
    email: str,
    settings: WorkflowSettings,
) -> None:
    """Answer 202 with the unsubscription request already waiting for ``email`` (a second
    unsubscription while one waits: Mailman answers 202, never 409)."""
    request = pending.for_email(session, mlist, email, RequestType.unsubscription, settings.now())
    if request is None:
        raise conflict(
            _("an unsubscription request for {email} is already pending").format(email=email)
        )
    resp.status = falcon.HTTP_202
    resp.media = {"token": request.token, "token_owner": request.token_owner.value}


def decide(
    session: Session,
    mlist: MailingList,
    token: str,
    action: str,
    actor: str,
    reason: str,
    settings: WorkflowSettings,
) -> None:
    """``accept`` moves the request on by one step: the subscriber's confirmation, or the
    approval.  reject (the person is told), discard (silently), defer/hold (left waiting)."""
    request = subscriptions.get_pending(session, token, mlist, settings)
    if action == "accept" and request.token_owner is TokenOwner.subscriber:
        subscriptions.confirm(session, mlist, token, actor=actor, settings=settings)
        return
    action = "defer" if action == "hold" else action
    subscriptions.moderate(
        session, mlist, token, action, actor=actor, reason=reason, settings=settings
    )
