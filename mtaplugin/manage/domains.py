"""Domains: create, find, list, remove; their owners (changed by the site admin only)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.errors import AlreadyExists, NotAllowed, NotFound
from mtaplugin.i18n import _
from mtaplugin.model import Domain, MailingList, User
from mtaplugin.posting.addresses import check_domain


def create(session: Session, mail_host: str, description: str = "", base_url: str = "") -> Domain:
    host = check_domain(mail_host)
    if session.scalar(select(Domain.id).where(Domain.mail_host == host)) is not None:
        raise AlreadyExists("mail_host", _("duplicate email host: {host}").format(host=host))
    domain = Domain(mail_host=host, description=description, base_url=base_url)
    session.add(domain)
    session.flush()
    return domain


def get(session: Session, mail_host: str) -> Domain:
    host = mail_host.strip().lower()
    domain = session.scalar(select(Domain).where(Domain.mail_host == host))
    if domain is None:
        raise NotFound("mail_host", _("no such domain: {host}").format(host=host))
    return domain


def all_domains(session: Session) -> list[tuple[Domain, int]]:
    """Every domain with its number of lists, by name."""
    rows = session.execute(
        select(Domain, func.count(MailingList.id))
        .outerjoin(MailingList, MailingList.mail_host == Domain.mail_host)
        .group_by(Domain.id)
        .order_by(Domain.mail_host)
    )
    return [(d, n) for d, n in rows]


def remove(session: Session, mail_host: str) -> None:
    """Remove a domain and, with it, its lists and their members."""
    session.delete(get(session, mail_host))
    session.flush()


def update(
    session: Session,
    domain: Domain,
    description: str | None = None,
    alias_domain: str | None = None,
    base_url: str | None = None,
) -> Domain:
    if description is not None:
        domain.description = description
    if alias_domain is not None:
        alias = check_domain(alias_domain, "alias_domain") if alias_domain else None
        if alias is not None:
            clash = session.scalar(
                select(Domain.id).where(
                    (Domain.alias_domain == alias) | (Domain.mail_host == alias),
                    Domain.id != domain.id,
                )
            )
            if clash is not None:
                raise AlreadyExists(
                    "alias_domain", _("{host} is already a domain or an alias").format(host=alias)
                )
        domain.alias_domain = alias
    if base_url is not None:
        domain.base_url = base_url
    session.flush()
    return domain


def check_owners_change(by_site_admin: bool) -> None:
    """Who may add or remove a domain's owners, on the web and through REST alike: the
    site admin only (a domain owner could otherwise make anyone an owner of the domain,
    or remove the other owners).  :class:`NotAllowed` for anyone else."""
    if not by_site_admin:
        raise NotAllowed(_("only the site administrator may add or remove a domain's owners"))


def add_owner(session: Session, domain: Domain, email: str, *, by_site_admin: bool) -> None:
    from mtaplugin.manage import users

    check_owners_change(by_site_admin)
    user = users.get_or_create_for(session, email)
    if user not in domain.owners:
        domain.owners.append(user)
    session.flush()


def remove_owner(session: Session, domain: Domain, user: User, *, by_site_admin: bool) -> None:
    check_owners_change(by_site_admin)
    if user in domain.owners:
        domain.owners.remove(user)
    session.flush()


def remove_owners(session: Session, domain: Domain, *, by_site_admin: bool) -> None:
    check_owners_change(by_site_admin)
    domain.owners.clear()
    session.flush()
