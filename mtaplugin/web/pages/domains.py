"""Domain admins: the lists of a domain (create, remove) and its alias domain; the site
admin: its owners.

The alias domain is the site admin's to set; a domain owner may pick one of ``[domains]
owner_aliases`` only (:mod:`mtaplugin.manage.alias_domains`)."""

from __future__ import annotations

import falcon
from sqlalchemy import select

from mtaplugin.config import Settings
from mtaplugin.errors import InvalidInput
from mtaplugin.manage import domains, lists, users
from mtaplugin.manage.alias_domains import AliasRules
from mtaplugin.model import AuditEntry, Domain, MailingList
from mtaplugin.vocabulary.addresses import check_list_name
from mtaplugin.web.common import (
    actor_of,
    gettext,
    redirect_after,
    require_login,
    session_of,
    viewer_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import render, render_form


class DomainIndex:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        viewer = require_login(req)
        rows = session_of(req).scalars(select(Domain).order_by(Domain.mail_host))
        shown = [d for d in rows if viewer.can_admin_domain(d.mail_host)]
        render(req, resp, "domains.html", domains=shown)


def administered_domain(req: falcon.Request, mail_host: str) -> Domain:
    """The domain ``mail_host`` if the viewer administers it; else 404 (not leaked)."""
    viewer = require_login(req)
    domain = session_of(req).scalar(
        select(Domain).where(Domain.mail_host == mail_host.strip().lower())
    )
    if domain is None or not viewer.can_admin_domain(domain.mail_host):
        raise falcon.HTTPNotFound(
            title=gettext(req, "No such domain"),
            description=gettext(req, "There is no domain here, or you may not see it."),
        )
    return domain


class DomainPage:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def _show(
        self, req: falcon.Request, resp: falcon.Response, domain: Domain, **extra: str
    ) -> None:
        session = session_of(req)
        rows = session.scalars(
            select(MailingList)
            .where(MailingList.mail_host == domain.mail_host)
            .order_by(MailingList.list_name)
        )
        render_form(
            req,
            resp,
            "domain.html",
            domain=domain,
            lists=list(rows),
            owners=sorted(
                min((a.email for a in u.addresses), default=u.user_id) for u in domain.owners
            ),
            styles=list(lists.STYLES),
            owner_aliases=sorted(self.settings.domains.owner_aliases),
            may_alias=viewer_of(req).is_admin or bool(self.settings.domains.owner_aliases),
            **extra,
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response, mail_host: str) -> None:
        self._show(req, resp, administered_domain(req, mail_host))

    def on_post(self, req: falcon.Request, resp: falcon.Response, mail_host: str) -> None:
        domain = administered_domain(req, mail_host)
        session = session_of(req)
        f = form(req)
        op = f.get("op")
        actor = actor_of(req)
        now = workflow_of(req).now()
        try:
            if op == "create":
                name = f.get("list_name").strip().lower()
                if not name:
                    raise InvalidInput("list_name", gettext(req, "may not be empty"))
                check_list_name(name, "list_name")
                mlist = lists.create(
                    session,
                    f"{name}@{domain.mail_host}",
                    f.get("style_name") or lists.DEFAULT_STYLE,
                    description=f.get("description").strip(),
                    clock=workflow_of(req).clock,
                )
                session.add(
                    AuditEntry(
                        actor=actor,
                        at=now,
                        action="list.create",
                        mailing_list_id=mlist.id,
                        detail={"list": mlist.fqdn_listname},
                    )
                )
                message = gettext(req, "Created {list}.").format(list=mlist.fqdn_listname)
            elif op == "remove":
                mlist = lists.get(session, f.get("list_id"))
                if mlist.mail_host != domain.mail_host:
                    raise InvalidInput("list_id", gettext(req, "not a list of this domain"))
                if f.get("confirm_name").strip().lower() != mlist.fqdn_listname:
                    raise InvalidInput(
                        "confirm_name",
                        gettext(req, "type the list's address to confirm the removal"),
                    )
                session.add(
                    AuditEntry(
                        actor=actor,
                        at=now,
                        action="list.remove",
                        detail={"list": mlist.fqdn_listname},
                    )
                )
                lists.remove(session, mlist.list_id)
                message = gettext(req, "Removed {list}.").format(list=mlist.fqdn_listname)
            elif op == "alias":
                rules = AliasRules.of(self.settings, viewer_of(req).is_admin)
                before = domain.alias_domain or ""
                domains.update(session, domain, alias_domain=f.get("alias_domain"), rules=rules)
                session.add(
                    AuditEntry(
                        actor=actor,
                        at=now,
                        action="domain.alias",
                        detail={
                            "domain": domain.mail_host,
                            "before": before,
                            "alias_domain": domain.alias_domain or "",
                        },
                    )
                )
                message = gettext(req, "Alias domain now: {alias}").format(
                    alias=domain.alias_domain or gettext(req, "none")
                )
            elif op in ("add_owner", "remove_owner"):
                domains.check_owners_change(viewer_of(req).is_admin)  # (NotAllowed: 403)
                email = f.get("email").strip()
                user = users.user_by_email(session, email, verified=True)
                if user is None:
                    raise InvalidInput(
                        "email", gettext(req, "no user has the address {email}").format(email=email)
                    )
                admin = viewer_of(req).is_admin
                if op == "add_owner":
                    clock = workflow_of(req).clock
                    domains.add_owner(session, domain, email, by_site_admin=admin, clock=clock)
                    message = gettext(req, "{email} owns {domain} now.")
                else:
                    domains.remove_owner(session, domain, user, by_site_admin=admin)
                    message = gettext(req, "{email} does not own {domain} any more.")
                message = message.format(email=email, domain=domain.mail_host)
                session.add(
                    AuditEntry(
                        actor=actor,
                        at=now,
                        action=f"domain.{op}",
                        detail={"domain": domain.mail_host, "email": email},
                    )
                )
            else:
                raise InvalidInput("op", gettext(req, "unknown operation"))
            session.flush()
        except InvalidInput as exc:
            self._show(req, resp, domain, error=f"{exc.field}: {exc.problem}")
            return
        redirect_after(req, resp, req.path, message)
