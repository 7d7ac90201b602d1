"""Moderators: (un)subscription requests waiting for a decision, one at a time or in bulk.

The decisions are the workflow's (:func:`mtaplugin.manage.subscriptions.moderate`): an
accepted request gets its welcome or goodbye and the owners' notice, as the list says."""

from __future__ import annotations

import falcon

from mtaplugin.enums import TokenOwner
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import N_
from mtaplugin.manage import subscriptions
from mtaplugin.model import MailingList, PendingRequest
from mtaplugin.web.common import (
    find_list,
    gettext,
    redirect_after,
    session_of,
    viewer_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import form_status, render


def _waiting(req: falcon.Request, mlist: MailingList) -> list[PendingRequest]:
    return subscriptions.pending_requests(
        session_of(req), mlist, token_owner=TokenOwner.moderator, settings=workflow_of(req)
    )


class Requests:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "moderate")
        render(req, resp, "requests.html", mlist=mlist, waiting=_waiting(req, mlist), done=[])

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "moderate")
        f = form(req)
        ids = {int(v) for v in f.all("request_id") if v.isdigit()}
        error = "" if ids else gettext(req, "Select at least one request.")
        action = f.get("action")
        done: list[tuple[str, str]] = []
        for request in [r for r in _waiting(req, mlist) if r.id in ids]:
            email = request.email
            try:
                subscriptions.moderate(
                    session_of(req),
                    mlist,
                    request.token,
                    action,
                    actor=f"web:{viewer_of(req).name}",
                    reason=f.get("reason"),
                    settings=workflow_of(req),
                )
            except InvalidInput as exc:
                error = f"{email}: {exc.problem}"
                break
            done.append((email, action))
        if not error:
            by_action: dict[str, list[str]] = {}
            for email, act in done:
                by_action.setdefault(act, []).append(email)
            said = [
                gettext(req, N_("{action}: {emails}")).format(
                    action=gettext(req, act), emails=", ".join(emails)
                )
                for act, emails in by_action.items()
            ]
            redirect_after(req, resp, req.path, *said)
            return
        render(
            req,
            resp,
            "requests.html",
            status=form_status(error),
            mlist=mlist,
            waiting=_waiting(req, mlist),
            done=done,
            error=error,
        )
