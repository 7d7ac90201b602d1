"""Moderators: (un)subscription requests waiting for a decision, one at a time or in bulk."""

from __future__ import annotations

import falcon

from mtaplugin.web import confirm
from mtaplugin.web.forms import form
from mtaplugin.web.pages.common import find_list, gettext, session_of, viewer_of
from mtaplugin.web.render import render


class Requests:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "moderate")
        waiting = confirm.waiting_for_moderators(session_of(req), mlist)
        render(req, resp, "requests.html", mlist=mlist, waiting=waiting, done=[])

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "moderate")
        f = form(req)
        session = session_of(req)
        ids = [int(v) for v in f.all("request_id") if v.isdigit()]
        error = "" if ids else gettext(req, "Select at least one request.")
        done = [
            (
                confirm.moderate(
                    session,
                    mlist,
                    i,
                    f.get("action"),
                    f"web:{viewer_of(req).name}",
                    f.get("reason"),
                ).email,
                f.get("action"),
            )
            for i in ids
        ]
        render(
            req,
            resp,
            "requests.html",
            status=falcon.HTTP_400 if error else falcon.HTTP_200,
            mlist=mlist,
            waiting=confirm.waiting_for_moderators(session, mlist),
            done=done,
            error=error,
        )
