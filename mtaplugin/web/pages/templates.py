"""List owners and domain owners: the templates of a list or a domain, each with where
its text comes from, an editor that checks a text and previews it before saving."""

from __future__ import annotations

from typing import Any

import falcon
from sqlalchemy import select

from mtaplugin.model import AuditEntry, Domain, MailingList
from mtaplugin.notices import editing
from mtaplugin.notices.templates import NAMES
from mtaplugin.web.common import (
    find_list,
    gettext,
    redirect_after,
    require_login,
    session_of,
    viewer_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.pages.domains import administered_domain
from mtaplugin.web.render import render, render_form


class _Target:
    """The list (or the domain alone) whose templates a page shows."""

    def __init__(self, req: falcon.Request, params: dict[str, str]) -> None:
        session = session_of(req)
        self.mlist: MailingList | None = None
        self.domain: Domain | None = None
        if "list_id" in params:
            self.mlist = find_list(req, params["list_id"], "administer")
            domain = session.scalar(select(Domain).where(Domain.mail_host == self.mlist.mail_host))
            assert domain is not None
            self.domain = domain
            self.base = f"/lists/{self.mlist.list_id}/templates"
            self.title = self.mlist.fqdn_listname
        elif "mail_host" in params:
            self.domain = administered_domain(req, params["mail_host"])
            self.base = f"/domains/{self.domain.mail_host}/templates"
            self.title = self.domain.mail_host
        else:
            if not require_login(req).is_admin:
                raise falcon.HTTPNotFound(
                    title=gettext(req, "Not found"),
                    description=gettext(req, "Only the site administrator sees this page."),
                )
            self.base = "/templates"
            self.title = gettext(req, "the site")

    @property
    def mail_host(self) -> str:
        return self.domain.mail_host if self.domain is not None else "example.org"

    def audit(self, req: falcon.Request, action: str, name: str) -> None:
        session_of(req).add(
            AuditEntry(
                actor=f"web:{viewer_of(req).name}",
                action=action,
                mailing_list_id=self.mlist.id if self.mlist is not None else None,
                at=workflow_of(req).now(),
                detail={"template": name, "scope": self.base},
            )
        )


class TemplateIndex:
    def on_get(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        target = _Target(req, params)
        render(
            req,
            resp,
            "templates.html",
            mlist=target.mlist,
            target=target,
            entries=editing.entries(session_of(req), target.mlist, target.domain),
        )


class TemplateEditor:
    def _show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        target: _Target,
        name: str,
        text: str | None = None,
        **extra: Any,
    ) -> None:
        session = session_of(req)
        entry = next(
            e for e in editing.entries(session, target.mlist, target.domain) if e.name == name
        )
        if text is None:
            # The list's own text, else what is used now, as a start (a URI's: empty)
            if entry.own is not None:
                text = entry.own.text
            elif entry.row is not None:
                text = entry.row.text
            else:
                text = editing.builtin_text(name)
        render_form(
            req,
            resp,
            "template_edit.html",
            mlist=target.mlist,
            target=target,
            entry=entry,
            text=text,
            builtin=editing.builtin_text(name),
            dollar=name in editing.DECORATION,
            variables=sorted(editing.sample_variables(target.mlist, target.mail_host)),
            **extra,
        )

    def _name(self, req: falcon.Request, name: str, target: _Target | None = None) -> str:
        site_only = target is not None and (target.mlist is not None or target.domain is not None)
        if name not in NAMES or (site_only and name in editing.SITE_ONLY):
            raise falcon.HTTPNotFound(
                title=gettext(req, "No such template"),
                description=gettext(req, "mtaplugin has no template of this name."),
            )
        return name

    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str, **params: str) -> None:
        target = _Target(req, params)
        self._show(req, resp, target, self._name(req, name, target))

    def on_post(self, req: falcon.Request, resp: falcon.Response, name: str, **params: str) -> None:
        target = _Target(req, params)
        name = self._name(req, name, target)
        f = form(req)
        op = f.get("op")
        session = session_of(req)
        if op == "reset":
            row = editing.own_row(session, target.mlist, target.domain, name)
            if row is not None:
                session.delete(row)
                target.audit(req, "template.reset", name)
            redirect_after(
                req,
                resp,
                target.base,
                gettext(req, "{name}: back to the default.").format(name=name),
            )
            return
        text = f.get("text").replace("\r\n", "\n")
        try:
            editing.check(name, text)
        except editing.InvalidTemplate as exc:
            problem = gettext(req, "Not saved: line {line}: {problem}").format(
                line=exc.line, problem=exc.problem
            )
            self._show(req, resp, target, name, text, error=problem)
            return
        # Rendered once with the sample values, for a preview and before saving: a text
        # that parses but fails to render (an include of no template, a call the sandbox
        # forbids) is refused too.
        variables = editing.sample_variables(target.mlist, target.mail_host)
        language = target.mlist.preferred_language if target.mlist is not None else "en"
        try:
            shown = editing.preview(name, text, language, variables)
        except Exception as exc:
            problem = gettext(req, "Not saved: {problem}").format(
                problem=f"{type(exc).__name__}: {exc}"
            )
            self._show(req, resp, target, name, text, error=problem)
            return
        if op == "preview":
            self._show(req, resp, target, name, text, preview=shown)
            return
        editing.save(session, target.mlist, target.domain, name, text)
        target.audit(req, "template.save", name)
        redirect_after(req, resp, target.base, gettext(req, "{name}: saved.").format(name=name))
