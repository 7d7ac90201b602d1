"""``/3.1/people/...``: one person across the site.  Not in Mailman's REST API (it has no
such resource); named and shaped for mtaplugin, documented in docs/people.md.

- ``GET /people/{email}``: everything the site holds about the person (site admin only):
  the JSON document of :mod:`mtaplugin.manage.people.export`; 404 when nothing is known.
- ``GET /people/{email}/forget``: what forgetting them would remove (site admin only);
  ``POST`` with ``archive`` (keep, remove, anonymise) and ``goodbye`` (false) forgets them.
- ``GET /people/{email}/lists``: the lists the caller administers where the address has
  a role or a ban; ``POST`` with ``action`` (remove, ban, moderate), ``moderation_action``
  (for moderate: default, accept, hold, reject, discard, defer) and optionally ``lists``
  (repeated; default: every list the caller administers) acts on all of them at once.
"""

from __future__ import annotations

from typing import Any

import falcon

from mtaplugin.api.dialect import Params, bad_request, forbidden
from mtaplugin.api.resources.base import principal, session, workflow
from mtaplugin.config import Settings
from mtaplugin.i18n import _
from mtaplugin.manage.people import across, export, forget


def _scope(req: falcon.Request) -> across.Scope:
    who = principal(req)
    return across.Scope(is_admin=who.is_admin, domains=who.domains, owns=who.administers)


class Person:
    def on_get(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        principal(req).require_admin()
        resp.media = export.build(session(req), email, workflow(req).now())


class Forget:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def on_get(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        principal(req).require_admin()
        p = Params.of(req)
        p.only({"archive"})
        choice = forget.parse_archive(p.str("archive", "keep"))
        plan = forget.plan(session(req), email)
        resp.media = {
            "email": plan.person.email,
            "archive": choice.value,
            "would_remove": plan.counts(),
            "lines": plan.lines(choice),
        }

    def on_post(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        from mtaplugin.web.keys import site_secret

        who = principal(req)
        who.require_admin()
        p = Params.of(req)
        p.only({"archive", "goodbye"})
        choice = forget.parse_archive(p.str("archive", "keep"))
        done = forget.forget(
            session(req),
            email,
            secret=site_secret(self.settings),
            actor=f"rest:{who.name}",
            archive=choice,
            send_goodbye_message=bool(p.bool("goodbye", False)),
            settings=workflow(req),
        )
        resp.media = {"email": done.person.email, "archive": choice.value, "removed": done.counts()}


def _finding(f: across.Finding) -> dict[str, Any]:
    action = f.moderation_action
    return {
        "list_id": f.mlist.list_id,
        "fqdn_listname": f.mlist.fqdn_listname,
        "roles": sorted(r.value for r in f.roles),
        "moderation_action": action.value if action else None,
        "banned": f.banned,
    }


class PersonLists:
    def on_get(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        found = across.find(session(req), _scope(req), email)
        entries = [_finding(f) for f in found]
        resp.media = {"start": 0, "total_size": len(entries), "entries": entries}

    def on_post(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        scope = _scope(req)
        if scope.empty:
            raise forbidden(_("{who} administers no list").format(who=principal(req).name))
        p = Params.of(req)
        p.only({"action", "moderation_action", "lists"})
        action = (p.str("action", required=True) or "").strip().lower()
        names = p.list("lists") or None
        target = across.Target(scope, email, f"rest:{principal(req).name}", names, workflow(req))
        s = session(req)
        if action == "remove":
            outcomes = across.remove(s, target)
        elif action == "ban":
            outcomes = across.ban(s, target)
        elif action == "moderate":
            chosen = across.parse_moderation(p.str("moderation_action", required=True) or "")
            outcomes = across.moderate(s, target, chosen)
        else:
            raise bad_request(_('Invalid Parameter "action": choose one of: remove, ban, moderate'))
        entries = [{"list": o.list, "changed": o.changed, "note": o.note} for o in outcomes]
        resp.media = {"start": 0, "total_size": len(entries), "entries": entries}
