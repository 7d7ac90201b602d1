"""``/uris``, ``/domains/{domain}/uris`` and ``/lists/{list}/uris``: where a template's
text is fetched from, per site, domain or list (Mailman's names).

A template's ``password`` (for fetching the URI) is written, never served.  Only the
site admin may use ``file:`` URIs: a list owner's footer must not read the server's files.
A list or domain owner's ``http(s)`` URI must name its host without variables, and the
host must resolve to public addresses only, or be allowed by ``[templates] allow_hosts``
(:mod:`mtaplugin.notices.destinations`; the fetch checks again, the site admin's URIs too).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import falcon
from sqlalchemy import Select, select, true, update

from mtaplugin.api import collections
from mtaplugin.api.dialect import Params, bad_request, invalid, no_content, not_found, resource
from mtaplugin.api.resources.base import mailing_list, principal, session, url, workflow
from mtaplugin.api.resources.domains import the_domain
from mtaplugin.enums import TemplateScope
from mtaplugin.i18n import _
from mtaplugin.model import Template, TemplateFetch
from mtaplugin.notices.destinations import owner_problem
from mtaplugin.notices.refresh import refresh_all
from mtaplugin.notices.sources import SAMPLE_URI_VARIABLES, expand, is_http, parse_mailman

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

TEMPLATE_NAMES = frozenset(
    {
        "domain:admin:notice:new-list",
        "list:admin:action:post",
        "list:admin:action:subscribe",
        "list:admin:action:unsubscribe",
        "list:admin:notice:subscribe",
        "list:admin:notice:unsubscribe",
        "list:admin:notice:disable",
        "list:admin:notice:increment",
        "list:admin:notice:removal",
        "list:admin:notice:pending",
        "list:admin:notice:unrecognized",
        "list:member:digest:header",
        "list:member:digest:footer",
        "list:member:digest:masthead",
        "list:member:regular:header",
        "list:member:regular:footer",
        "list:user:action:invite",
        "list:user:action:subscribe",
        "list:user:action:unsubscribe",
        "list:user:notice:goodbye",
        "list:user:notice:hold",
        "list:user:notice:no-more-today",
        "list:user:notice:post",
        "list:user:notice:probe",
        "list:user:notice:refuse",
        "list:user:notice:rejected",
        "list:user:notice:warning",
        "list:user:notice:welcome",
        "site:user:action:register",
        "site:user:action:verify",
        "site:user:notice:account-exists",
    }
)


class _Scope:
    def __init__(self, req: falcon.Request, params: dict[str, str], write: bool) -> None:
        self.domain_id: int | None = None
        self.list_id: int | None = None
        if "list" in params:
            mlist = mailing_list(req, params["list"], administer=write)
            self.kind = TemplateScope.list
            self.list_id = mlist.id
            self.base: tuple[str, ...] = ("lists", mlist.list_id, "uris")
        elif "domain" in params:
            domain = the_domain(req, params["domain"], administer=write)
            self.kind = TemplateScope.domain
            self.domain_id = domain.id
            self.base = ("domains", domain.mail_host, "uris")
        else:
            principal(req).require_admin()
            self.kind = TemplateScope.site
            self.base = ("uris",)

    def query(self, with_text: bool = False) -> Select[Template]:
        query = (
            select(Template)
            .where(
                Template.scope == self.kind,
                Template.domain_id.is_(None)
                if self.domain_id is None
                else Template.domain_id == self.domain_id,
                Template.mailing_list_id.is_(None)
                if self.list_id is None
                else Template.mailing_list_id == self.list_id,
                Template.language == "",
            )
            .order_by(Template.name)
        )
        return query if with_text else query.where(Template.uri != "")

    def find(self, req: falcon.Request, name: str, with_text: bool = False) -> Template | None:
        return session(req).scalar(self.query(with_text).where(Template.name == name))


def _entry(req: falcon.Request, scope: _Scope, t: Template) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": t.name,
        "uri": t.uri,
        "self_link": url(req, *scope.base, t.name),
    }
    if t.username:
        body["username"] = t.username
    return resource(body)


def _name(name: str) -> str:
    if name not in TEMPLATE_NAMES:
        raise not_found(_("No such template: {n}").format(n=name))
    return name


def _check_uri(req: falcon.Request, name: str, uri: str) -> str:
    scheme = urlsplit(uri).scheme.lower()
    if scheme not in ("http", "https", "file", "mailman"):
        raise invalid(name, _("expected an http, https, mailman or file URI"))
    if scheme == "file" and not principal(req).is_admin:
        raise invalid(name, _("only the site administrator may use file: URIs"))
    if scheme in ("http", "https") and not principal(req).is_admin:
        _check_host(req, name, uri)
    if scheme == "mailman" and parse_mailman(expand(uri, SAMPLE_URI_VARIABLES)) is None:
        raise invalid(name, _("this mailman: URI names no template mtaplugin ships"))
    return uri


def _check_host(req: falcon.Request, name: str, uri: str) -> None:
    """A list owner's http(s) URI: its host is public, or allowed by the site."""
    if "$" in urlsplit(uri).netloc:
        raise invalid(name, _("the host must be written out, without variables"))
    allow_hosts: tuple[str, ...] = getattr(req.context, "template_hosts", ())
    kind = owner_problem(uri, allow_hosts)
    if kind == "resolve":
        raise invalid(name, _("the host name does not resolve"))
    if kind == "address":
        raise invalid(
            name,
            _(
                "the host is not a public address; the site administrator may allow it "
                "([templates] allow_hosts)"
            ),
        )
    if kind is not None:
        raise invalid(name, _("expected an http, https, mailman or file URI"))


def _set(
    req: falcon.Request, scope: _Scope, name: str, uri: str, username: str, password: str
) -> None:
    s = session(req)
    existing = scope.find(req, name, with_text=True)
    if not uri:
        if existing is not None:
            if existing.text:
                existing.uri, existing.username, existing.password = "", "", ""
            else:
                s.delete(existing)
        return
    if existing is None:
        existing = Template(
            scope=scope.kind,
            domain_id=scope.domain_id,
            mailing_list_id=scope.list_id,
            name=name,
            language="",
        )
        s.add(existing)
    # The URI is the latest word: a text written in the web UI before gives way to it.
    existing.text = ""
    existing.uri, existing.username, existing.password = uri, username, password
    # Mailman evicts the cached text when a URI is set again (Postorius does so after
    # every edit, with the same URI): the template-fetch job fetches it at its next run.
    s.execute(
        update(TemplateFetch)
        .where(TemplateFetch.uri == uri if "$" not in uri else true())
        .values(refresh_at=EPOCH)
    )


def _fetch_after_commit(req: falcon.Request, scope: _Scope, names: list[str]) -> None:
    """A URI just set is fetched once the change is committed, in this request (bounded
    by ``[templates] fetch_timeout``): the next post has the template, on a site that
    runs only ``mtaplugin api`` too.  A fetch that fails leaves it to the
    ``template-fetch`` job (which the API process runs as well)."""
    if not names:
        return
    s = session(req)
    s.flush()
    ids = {t.id for n in names if (t := scope.find(req, n)) is not None}
    req.context.after_commit.append(
        functools.partial(
            refresh_all,
            req.context.sessions,
            req.context.templates,
            workflow(req).clock(),
            templates=ids,
        )
    )


class Uris:
    def on_get(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        scope = _Scope(req, params, write=False)
        items = [_entry(req, scope, t) for t in session(req).scalars(scope.query())]
        resp.media = collections.from_list(req, items)

    def _write(self, req: falcon.Request, resp: falcon.Response, params: dict[str, str]) -> None:
        scope = _Scope(req, params, write=True)
        p = Params.of(req)
        names = [k for k in p.values if k not in ("username", "password")]
        unknown = sorted(n for n in names if n not in TEMPLATE_NAMES)
        if unknown:
            raise bad_request(_("Unexpected parameters: {n}").format(n=", ".join(unknown)))
        username = p.text("username") or ""
        password = p.text("password") or ""
        changes = {n: _check_uri(req, n, p.str(n) or "") if p.str(n) else "" for n in names}
        if req.method == "PUT":
            for t in session(req).scalars(scope.query()):
                changes.setdefault(t.name, "")
        for n, uri in changes.items():
            _set(req, scope, n, uri, username, password)
        _fetch_after_commit(req, scope, [n for n, uri in changes.items() if is_http(uri)])
        no_content(resp)

    def on_patch(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        self._write(req, resp, params)

    def on_put(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        self._write(req, resp, params)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        scope = _Scope(req, params, write=True)
        for t in session(req).scalars(scope.query()):
            session(req).delete(t)
        no_content(resp)


class OneUri:
    def _found(
        self, req: falcon.Request, template: str, params: dict[str, str], write: bool
    ) -> tuple[_Scope, Template]:
        scope = _Scope(req, params, write=write)
        t = scope.find(req, _name(template))
        if t is None:
            raise not_found(_("No URI set for {n}").format(n=template))
        return scope, t

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, template: str, **params: str
    ) -> None:
        scope, t = self._found(req, template, params, write=False)
        resp.media = _entry(req, scope, t)

    def _write(
        self, req: falcon.Request, resp: falcon.Response, template: str, params: dict[str, str]
    ) -> None:
        scope = _Scope(req, params, write=True)
        name = _name(template)
        p = Params.of(req)
        p.only({"uri", "username", "password"})
        uri = p.str("uri") or ""
        if uri:
            _check_uri(req, "uri", uri)
        _set(req, scope, name, uri, p.text("username") or "", p.text("password") or "")
        no_content(resp)

    def on_patch(
        self, req: falcon.Request, resp: falcon.Response, template: str, **params: str
    ) -> None:
        self._write(req, resp, template, params)

    def on_put(
        self, req: falcon.Request, resp: falcon.Response, template: str, **params: str
    ) -> None:
        self._write(req, resp, template, params)

    def on_delete(
        self, req: falcon.Request, resp: falcon.Response, template: str, **params: str
    ) -> None:
        _scope, t = self._found(req, template, params, write=True)
        session(req).delete(t)
        no_content(resp)
