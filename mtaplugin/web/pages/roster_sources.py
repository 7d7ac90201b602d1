"""List owners: the list's roster sources (LDAP or SQL, :mod:`mtaplugin.roster_sources`), their
last sync and its outcome, and "Sync now" (with a dry run, and ``force`` past the
removal bound).  Creating, changing and removing a source is for the site administrator
only (its URL and credentials reach other systems); the bind password is write-only: the
form shows whether one is set, and an empty field keeps it."""

from __future__ import annotations

from typing import Any

import falcon
from sqlalchemy import Engine

from mtaplugin.db import sessionmaker_for
from mtaplugin.enums import MemberRole
from mtaplugin.errors import InvalidInput
from mtaplugin.manage import members
from mtaplugin.model import MailingList
from mtaplugin.roster_sources import sources
from mtaplugin.roster_sources.sync import SyncReport, sync
from mtaplugin.web.common import (
    actor_of,
    audit,
    find_list,
    gettext,
    redirect_after,
    session_of,
    viewer_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import render_form

#: the settings the admin's form edits, in its order
FORM_FIELDS = (
    "kind", "url", "bind_dn", "group_dn", "member_attribute", "base_dn", "ldap_filter",
    "mail_attribute", "name_attribute", "query", "timeout", "interval", "max_removals",
    "max_removal_percent",
)  # fmt: skip


class RosterSources:
    def _show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        mlist: MailingList,
        report: SyncReport | None = None,
        error: str = "",
    ) -> None:
        shown = {s.role.value: sources.view(s) for s in sources.for_list(session_of(req), mlist)}
        render_form(
            req,
            resp,
            "roster_sources.html",
            mlist=mlist,
            shown=shown,
            roles=[r.value for r in MemberRole if r is not MemberRole.nonmember],
            fields=FORM_FIELDS,
            may_edit=viewer_of(req).is_admin,
            report=report,
            error=error,
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        self._show(req, resp, find_list(req, list_id, "administer"))

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "administer")
        f = form(req)
        op = f.get("op")
        try:
            role = members.parse_role(f.get("role") or "member")
            if op == "sync":
                self._show(req, resp, mlist, report=self._sync(req, mlist, role))
                return
            if not viewer_of(req).is_admin:
                raise falcon.HTTPForbidden(
                    title=gettext(req, "Not allowed"),
                    description=gettext(
                        req, "Only the site administrator may change a roster source."
                    ),
                )
            if op == "remove":
                sources.remove(session_of(req), mlist, role)
                audit(req, mlist, "roster_source.remove", role=role.value)
                said = gettext(req, "Removed the roster source; its members stay.")
            else:
                values: dict[str, Any] = {k: f.get(k) for k in FORM_FIELDS if k in f}
                values["enabled"] = bool(f.get("enabled"))
                if f.get("bind_password"):
                    values["bind_password"] = f.get("bind_password")
                sources.save(session_of(req), mlist, role, values, clock=workflow_of(req).clock)
                audit(req, mlist, "roster_source.set", role=role.value)
                said = gettext(req, "Saved the roster source.")
        except InvalidInput as exc:
            session_of(req).rollback()
            self._show(req, resp, mlist, error=f"{exc.field}: {exc.problem}")
            return
        redirect_after(req, resp, req.path, said)

    def _sync(self, req: falcon.Request, mlist: MailingList, role: MemberRole) -> SyncReport:
        f = form(req)
        s = session_of(req)
        source_id = sources.get(s, mlist, role).id
        bind = s.get_bind()
        factory = sessionmaker_for(bind if isinstance(bind, Engine) else bind.engine)
        s.commit()  # the sync opens its own transactions
        return sync(
            factory,
            source_id,
            workflow_of(req),
            force=bool(f.get("force")),
            dry_run=bool(f.get("dry_run")),
            actor=actor_of(req),
        )
