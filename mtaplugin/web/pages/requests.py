"""Moderators: (un)subscription requests waiting for a decision, one at a time or in bulk.

The decisions are the workflow's (:func:`mtaplugin.manage.subscriptions.moderate`): an
accepted request gets its welcome or goodbye and the owners' notice, as the list says."""

from __future__ import annotations

import falcon

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import N_
from mtaplugin.manage import subscriptions
from mtaplugin.web.common import (
    actor_of,
    find_list,
    gettext,
    redirect_after,
    requests_waiting,
    session_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import render, render_form


class Requests:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "moderate")
        waiting = requests_waiting(req, mlist)
        render(req, resp, "requests.html", mlist=mlist, waiting=waiting, done=[])

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "moderate")
        f = form(req)
        ids = {int(v) for v in f.all("request_id") if v.isdigit()}
        error = "" if ids else gettext(req, "Select at least one request.")
        action = f.get("action")
        done: list[tuple[str, str]] = []
        for request in [r for r in requests_waiting(req, mlist) if r.id in ids]:
            email = request.email
            try:
                subscriptions.moderate(
                    session_of(req),
                    mlist,
                    request.token,
                    action,
                    actor=actor_of(req),
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
        render_form(
            req,
            resp,
            "requests.html",
            mlist=mlist,
            waiting=requests_waiting(req, mlist),
            done=done,
            error=error,
        )
