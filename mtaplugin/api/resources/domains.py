"""``/domains``, ``/domains/{domain}`` and its owners.

``alias_domain`` is the site admin's (a domain owner may set only one of ``[domains]
owner_aliases``), and never another tenant's domain, a public suffix or one of the site's
own mail domains: :mod:`mtaplugin.manage.alias_domains`.  ``owner`` is the site admin's.
"""

from __future__ import annotations

from typing import Any

import falcon
from sqlalchemy import select

from mtaplugin.api import collections
from mtaplugin.api.dialect import Params, bad_request, created, no_content, not_found, resource
from mtaplugin.api.resources.base import principal, session, url, workflow
from mtaplugin.api.resources.people_entries import user_entry
from mtaplugin.config import Settings
from mtaplugin.errors import AlreadyExists, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import domains
from mtaplugin.manage.alias_domains import AliasRules
from mtaplugin.model import Domain

#: the writable fields of a domain (``mail_host`` too when it is created)
FIELDS = frozenset({"description", "alias_domain", "base_url", "owner"})


def domain_entry(req: falcon.Request, d: Domain) -> dict[str, Any]:
    return resource(
        {
            "mail_host": d.mail_host,
            "description": d.description or None,
            "alias_domain": d.alias_domain,
            "base_url": d.base_url or None,
            "self_link": url(req, "domains", d.mail_host),
        },
        # Mailman 3.3.10 sends the keys it has no value for as null (Postorius reads them)
    )


def the_domain(req: falcon.Request, mail_host: str, administer: bool = False) -> Domain:
    try:
        d = domains.get(session(req), mail_host)
    except NotFound:
        raise not_found(_("No such domain: {d}").format(d=mail_host)) from None
    who = principal(req)
    if administer or not who.is_admin:
        who.check_domain(d.mail_host)
    return d


class _WithSettings:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def rules(self, req: falcon.Request) -> AliasRules:
        return AliasRules.of(self.settings, principal(req).is_admin)


class Domains(_WithSettings):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        Params.of(req).only(collections.PAGING)
        query = select(Domain).order_by(Domain.mail_host)
        if (visible := principal(req).domains_filter()) is not None:
            query = query.where(visible)
        resp.media = collections.from_query(
            req, session(req), query, lambda d: domain_entry(req, d), scalars=True
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        principal(req).require_admin()
        p = Params.of(req)
        p.only({"mail_host", *FIELDS})
        s = session(req)
        try:
            d = domains.create(
                s,
                p.str("mail_host", required=True),
                p.text("description") or "",
                clock=workflow(req).clock,
            )
        except AlreadyExists:
            raise bad_request(
                _("Duplicate email host: {h}").format(h=p.str("mail_host", "").strip().lower())
            ) from None
        domains.update(
            s,
            d,
            alias_domain=p.text("alias_domain"),
            base_url=p.text("base_url"),
            rules=self.rules(req),
        )
        for owner in p.list("owner"):
            if owner and owner != "None":
                admin = principal(req).is_admin
                domains.add_owner(s, d, owner, by_site_admin=admin, clock=workflow(req).clock)
        created(resp, url(req, "domains", d.mail_host))


class OneDomain(_WithSettings):
    def on_get(self, req: falcon.Request, resp: falcon.Response, domain: str) -> None:
        resp.media = domain_entry(req, the_domain(req, domain))

    def _update(self, req: falcon.Request, resp: falcon.Response, domain: str) -> None:
        d = the_domain(req, domain, administer=True)
        p = Params.of(req)
        p.only(FIELDS)
        if "owner" in p:
            principal(req).require_admin()
        s = session(req)
        domains.update(
            s,
            d,
            description=p.text("description"),
            alias_domain=p.text("alias_domain"),
            base_url=p.text("base_url"),
            rules=self.rules(req),
        )
        if "owner" in p:
            for owner in p.list("owner"):
                admin = principal(req).is_admin
                domains.add_owner(s, d, owner, by_site_admin=admin, clock=workflow(req).clock)
        no_content(resp)

    on_patch = _update
    on_put = _update

    def on_delete(self, req: falcon.Request, resp: falcon.Response, domain: str) -> None:
        principal(req).require_admin()
        d = the_domain(req, domain)
        session(req).delete(d)
        no_content(resp)


class DomainOwners:
    def on_get(self, req: falcon.Request, resp: falcon.Response, domain: str) -> None:
        d = the_domain(req, domain)
        items = [user_entry(req, u) for u in sorted(d.owners, key=lambda u: u.id)]
        resp.media = collections.from_list(req, items)

    def on_post(self, req: falcon.Request, resp: falcon.Response, domain: str) -> None:
        principal(req).require_admin()
        d = the_domain(req, domain)
        p = Params.of(req)
        p.only({"owner"})
        owners = p.list("owner")
        if not owners:
            raise bad_request(_("Missing Parameter: owner"))
        for owner in owners:
            admin = principal(req).is_admin
            domains.add_owner(
                session(req), d, owner, by_site_admin=admin, clock=workflow(req).clock
            )
        no_content(resp)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, domain: str) -> None:
        principal(req).require_admin()
        d = the_domain(req, domain)
        domains.remove_owners(session(req), d, by_site_admin=principal(req).is_admin)
        no_content(resp)
