"""A Mailman 3 site's domains (description, alias domain, owners, template URIs), its
site-wide bans and site template URIs, made here; and the template URIs of every scope,
which a list's plan carries too."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import TemplateScope
from mtaplugin.errors import NotFound
from mtaplugin.i18n import _
from mtaplugin.importers.mm3rest import SiteData
from mtaplugin.manage import bans, domains
from mtaplugin.manage.alias_domains import AliasRules
from mtaplugin.model import Template
from mtaplugin.notices.sources import SAMPLE_URI_VARIABLES, expand, parse_mailman
from mtaplugin.vocabulary.addresses import normalize_email

#: the URI schemes mtaplugin fetches templates from
_URI_SCHEMES = ("http:", "https:", "file:")


def carried_uri(uri: dict[str, Any], notes: list[str]) -> bool:
    """Whether a template URI carries: ``http:``, ``https:`` and ``file:`` (fetched here
    as in Mailman), and a ``mailman:`` URI that names a template mtaplugin ships (the
    same check as the REST API's); anything else is a note."""
    text = str(uri.get("uri", ""))
    if text.lower().startswith(_URI_SCHEMES):
        return True
    if text.lower().startswith("mailman:"):
        if parse_mailman(expand(text, SAMPLE_URI_VARIABLES)) is not None:
            return True
        notes.append(
            _("template {name}: {uri} names no template mtaplugin ships; not carried").format(
                name=uri.get("name"), uri=text
            )
        )
        return False
    notes.append(
        _("template {name}: {uri} is not an http, https, file or mailman URI; not carried").format(
            name=uri.get("name"), uri=text
        )
    )
    return False


def _set_uris(
    session: Session,
    scope: TemplateScope,
    uris: list[dict[str, Any]],
    changes: list[str],
    *,
    domain_id: int | None = None,
    mailing_list_id: int | None = None,
    where: str,
) -> None:
    for entry in uris:
        if not carried_uri(entry, changes):
            continue
        name = str(entry["name"])
        wanted = (
            str(entry["uri"]),
            str(entry.get("username") or ""),
            str(entry.get("password") or ""),
        )
        set_template_uri(session, scope, name, wanted, changes, where, domain_id, mailing_list_id)


def set_template_uri(
    session: Session,
    scope: TemplateScope,
    name: str,
    wanted: tuple[str, str, str],
    changes: list[str],
    where: str,
    domain_id: int | None = None,
    mailing_list_id: int | None = None,
) -> None:
    """The template ``name`` of that scope fetched from ``wanted`` (uri, user, password)."""
    row = session.scalar(
        select(Template).where(
            Template.scope == scope,
            Template.domain_id.is_(None) if domain_id is None else Template.domain_id == domain_id,
            Template.mailing_list_id.is_(None)
            if mailing_list_id is None
            else Template.mailing_list_id == mailing_list_id,
            Template.name == name,
            Template.language == "",
        )
    )
    if row is None:
        row = Template(scope=scope, domain_id=domain_id, mailing_list_id=mailing_list_id, name=name)
        session.add(row)
    elif (row.uri, row.username, row.password) == wanted and not row.text:
        return
    row.uri, row.username, row.password = wanted
    row.text = ""
    changes.append(
        _("{where}: template {name} from {uri}").format(where=where, name=name, uri=wanted[0])
    )


def apply_site(session: Session, site: SiteData, hosts: set[str] | None = None) -> list[str]:
    """Domains (all, or those in ``hosts``), their owners and templates, site bans and
    site templates; what changed, in words."""
    changes: list[str] = []
    for domain, owners, uris in site.domains:
        host = str(domain["mail_host"]).lower()
        if hosts is not None and host not in hosts:
            continue
        try:
            row = domains.get(session, host)
        except NotFound:
            row = domains.create(session, host)
            changes.append(_("created the domain {host}").format(host=host))
        description = str(domain.get("description") or "")
        alias = str(domain.get("alias_domain") or "")
        if row.description != description or (row.alias_domain or "") != alias:
            # the import is the site admin's (the CLI): any alias the checks allow
            rules = AliasRules.for_site_admin()
            domains.update(session, row, description=description, alias_domain=alias, rules=rules)
            changes.append(_("{host}: description and alias domain set").format(host=host))
        for email in owners:
            if normalize_email(email) not in {a.email for u in row.owners for a in u.addresses}:
                domains.add_owner(session, row, email, by_site_admin=True)
                changes.append(_("{host}: owner {email}").format(host=host, email=email))
        _set_uris(session, TemplateScope.domain, uris, changes, domain_id=row.id, where=host)
    if hosts is None:
        for email in site.bans:
            if bans.find(session, None, email) is None:
                bans.add(session, None, email)
                changes.append(_("banned {address} on every list").format(address=email))
        _set_uris(session, TemplateScope.site, site.uris, changes, where=_("site"))
    session.flush()
    return changes
