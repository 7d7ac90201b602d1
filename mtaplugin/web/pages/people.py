"""One person across the site, on the web.

- ``/account/export`` (a download) and ``/account/export.json`` (shown in the browser):
  everything the site holds about the logged-in person, their own data only, the same
  JSON document as ``mtaplugin people export``.
- ``/people``: for whoever administers lists (the site admin: all; a domain owner: their
  domains'; a list owner: their lists): find an address on every one of those lists, and
  remove it, ban it or set its moderation action on the lists ticked, in one action."""

from __future__ import annotations

import json
from urllib.parse import quote

import falcon

from mtaplugin.errors import InvalidInput
from mtaplugin.manage.people import across, export
from mtaplugin.web.common import (
    gettext,
    redirect_after,
    require_login,
    session_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import render_form
from mtaplugin.web.roles import Viewer


class MyData:
    """The logged-in person's own data, as JSON."""

    def __init__(self, download: bool) -> None:
        self.download = download

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        viewer = require_login(req)
        if not viewer.emails:
            raise falcon.HTTPNotFound(
                title=gettext(req, "No address"),
                description=gettext(req, "Your account has no address."),
            )
        doc = export.build(session_of(req), min(viewer.emails), workflow_of(req).now())
        resp.content_type = "application/json; charset=utf-8"
        resp.text = json.dumps(doc, indent=2, ensure_ascii=False)
        resp.set_header("Content-Security-Policy", "default-src 'none'; sandbox")
        if self.download:
            resp.set_header("Content-Disposition", 'attachment; filename="my-data.json"')


def _scope(req: falcon.Request) -> tuple[Viewer, across.Scope]:
    viewer = require_login(req)
    scope = across.Scope(is_admin=viewer.is_admin, domains=viewer.domains, owns=viewer.owns)
    if scope.empty:
        raise falcon.HTTPForbidden(
            title=gettext(req, "Not allowed"),
            description=gettext(req, "This page is for the owners of lists."),
        )
    return viewer, scope


class People:
    def _show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        scope: across.Scope,
        email: str,
        error: str = "",
    ) -> None:
        found: list[across.Finding] = []
        if email and not error:
            try:
                found = across.find(session_of(req), scope, email)
            except InvalidInput as exc:
                error = f"{exc.field}: {exc.problem}"
        render_form(
            req,
            resp,
            "people.html",
            email=email,
            found=found,
            choices=across.MODERATION_CHOICES,
            error=error,
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        _viewer, scope = _scope(req)
        self._show(req, resp, scope, (req.get_param("email") or "").strip())

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        viewer, scope = _scope(req)
        f = form(req)
        email = f.get("email").strip()
        names = f.all("lists")
        action = f.get("action")
        s = session_of(req)
        if not names:
            self._show(req, resp, scope, email, gettext(req, "lists: tick at least one list"))
            return
        target = across.Target(scope, email, f"web:{viewer.name}", names, workflow_of(req))
        try:
            if action == "remove":
                outcomes = across.remove(s, target)
                done = gettext(req, "Removed {email} from {list}.")
            elif action == "ban":
                outcomes = across.ban(s, target)
                done = gettext(req, "Banned {email} from {list}.")
            elif action == "moderate":
                chosen = across.parse_moderation(f.get("moderation_action"))
                outcomes = across.moderate(s, target, chosen)
                done = gettext(req, "Set the moderation of {email} on {list}.")
            else:
                raise InvalidInput("action", gettext(req, "choose remove, ban or moderate"))
        except InvalidInput as exc:
            s.rollback()
            self._show(req, resp, scope, email, f"{exc.field}: {exc.problem}")
            return
        said = [
            done.format(email=email, list=o.list) if o.changed else f"{o.list}: {o.note}"
            for o in outcomes
        ]
        redirect_after(req, resp, f"/people?email={quote(email, safe='@')}", *said)
