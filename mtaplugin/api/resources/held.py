"""``/lists/{list}/held`` (held posts) and ``/lists/{list}/requests`` ((un)subscription
requests waiting on someone), with Mailman's moderation actions."""

from __future__ import annotations

from typing import Any

import falcon
from sqlalchemy import func, select

from mtaplugin.api import collections, workflows
from mtaplugin.api.dialect import (
    Params,
    as_int,
    bad_request,
    conflict,
    iso,
    no_content,
    not_found,
    resource,
)
from mtaplugin.api.resources.base import mailing_list, principal, session, url, workflow
from mtaplugin.enums import RequestType, TokenOwner
from mtaplugin.errors import AlreadyExists, InvalidInput
from mtaplugin.i18n import _
from mtaplugin.manage import held as manage_held
from mtaplugin.manage import pending, subscriptions
from mtaplugin.model import HeldMessage, MailingList, PendingRequest
from mtaplugin.vocabulary.addresses import normalize_email

#: Mailman's action names → mtaplugin's
_HELD_ACTIONS = {
    "accept": "approve",
    "approve": "approve",
    "reject": "reject",
    "discard": "discard",
    "defer": "defer",
    "hold": "defer",
}


def held_entry(req: falcon.Request, mlist: MailingList, held: HeldMessage) -> dict[str, Any]:
    reasons = "; ".join(str(text) for _rule, text in held.reasons) or _("held for moderation")
    return resource(
        {
            "request_id": held.id,
            "type": "held message",
            "hold_date": iso(held.hold_date),
            "message_id": held.message_id,
            "msg": held.raw.decode("utf-8", errors="replace"),
            "reason": reasons,
            "rules": [str(rule) for rule, _text in held.reasons],
            "sender": held.sender,
            "subject": held.subject,
            "original_subject": held.subject,
            "self_link": url(req, "lists", mlist.list_id, "held", held.id),
        }
    )


def _held_id(value: str) -> int:
    try:
        return as_int("request_id", value, minimum=1)
    except falcon.HTTPBadRequest:
        raise not_found(_("No such held message: {id}").format(id=value)) from None


class Held:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list)
        Params.of(req).only(collections.PAGING)
        where = HeldMessage.mailing_list_id == mlist.id
        query = select(HeldMessage).where(where).order_by(HeldMessage.hold_date, HeldMessage.id)
        count = select(func.count(HeldMessage.id)).where(where)
        resp.media = collections.from_query(
            req,
            session(req),
            query,
            lambda h: held_entry(req, mlist, h),
            count_query=count,
            scalars=True,
        )


class HeldCount:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list)
        n = session(req).scalar(
            select(func.count(HeldMessage.id)).where(HeldMessage.mailing_list_id == mlist.id)
        )
        resp.media = resource({"count": int(n or 0)})


class OneHeld:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str, held: str) -> None:
        mlist = mailing_list(req, list)
        h = manage_held.get(session(req), mlist, _held_id(held))
        resp.media = held_entry(req, mlist, h)

    def on_post(self, req: falcon.Request, resp: falcon.Response, list: str, held: str) -> None:
        mlist = mailing_list(req, list)
        p = Params.of(req)
        p.only({"action", "comment", "reason", "forward"})
        action = p.str("action", required=True).strip().lower()
        if action not in _HELD_ACTIONS:
            raise bad_request(
                _('Invalid Parameter "action": {a!r}; choose one of: {c}').format(
                    a=action, c="accept, reject, discard, defer, hold"
                )
            )
        held_id = _held_id(held)
        forward = [normalize_or_400("forward", e) for e in p.list("forward") if e.strip()]
        by = manage_held.Moderator.of(session(req), mlist, principal(req).name, workflow(req))
        if forward:
            manage_held.forward(by, held_id, forward)
        reason = p.text("comment") or p.text("reason") or ""
        manage_held.act(by, held_id, _HELD_ACTIONS[action], reason)
        no_content(resp)


def normalize_or_400(field: str, value: str) -> str:
    try:
        return normalize_email(value, field)
    except InvalidInput as exc:
        raise bad_request(
            _('Invalid Parameter "{field}": {problem}').format(field=field, problem=exc.problem)
        ) from None


# --- (un)subscription requests -------------------------------------------------------------
def request_entry(req: falcon.Request, mlist: MailingList, r: PendingRequest) -> dict[str, Any]:
    return resource(
        {
            "token": r.token,
            "token_owner": r.token_owner.value,
            "type": r.request_type.value,
            "request_type": r.request_type.value,
            "list_id": mlist.list_id,
            "email": r.email,
            "display_name": r.display_name,
            "when": iso(r.created_at),
            "self_link": url(req, "lists", mlist.list_id, "requests", r.token),
        }
    )


def _waiting(req: falcon.Request) -> tuple[list[RequestType], TokenOwner | None]:
    """The kinds and the token owner the query string asks for."""
    p = Params.of(req)
    p.only({"token_owner", "request_type", *collections.PAGING})
    kind = p.enum("request_type", RequestType, RequestType.subscription)
    if kind not in (RequestType.subscription, RequestType.unsubscription):
        raise bad_request(_('Invalid Parameter "request_type": subscription or unsubscription'))
    return [kind], p.enum("token_owner", TokenOwner)


class Requests:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list)
        kinds, owner = _waiting(req)
        resp.media = collections.from_query(
            req,
            session(req),
            pending.waiting_query(mlist, workflow(req).now(), kinds, owner),
            lambda r: request_entry(req, mlist, r),
            scalars=True,
        )


class RequestsCount:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list)
        kinds, owner = _waiting(req)
        n = pending.count_waiting(session(req), mlist, workflow(req).now(), kinds, owner)
        resp.media = resource({"count": n})


class OneRequest:
    def _get(self, req: falcon.Request, mlist: MailingList, token: str) -> PendingRequest:
        return subscriptions.get_pending(session(req), token, mlist, workflow(req))

    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str, token: str) -> None:
        mlist = mailing_list(req, list)
        resp.media = request_entry(req, mlist, self._get(req, mlist, token))

    def on_post(self, req: falcon.Request, resp: falcon.Response, list: str, token: str) -> None:
        mlist = mailing_list(req, list)
        p = Params.of(req)
        p.only({"action", "reason"})
        action = p.str("action", required=True).strip().lower()
        self._get(req, mlist, token)
        who = principal(req).name
        if action not in ("accept", "reject", "discard", "defer", "hold"):
            raise bad_request(
                _('Invalid Parameter "action": {a!r}; choose one of: {c}').format(
                    a=action, c="accept, reject, discard, defer, hold"
                )
            )
        try:
            workflows.decide(
                session(req), mlist, token, action, who, p.text("reason") or "", workflow(req)
            )
        except AlreadyExists as exc:
            raise conflict(exc.problem) from None
        no_content(resp)
