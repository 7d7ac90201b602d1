"""Domains: create, find, list, remove; their owners (changed by the site admin only);
their alias domain (:mod:`.alias_domains` says which one a domain may take)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.clock import Clock, system_clock
from mtaplugin.errors import AlreadyExists, NotAllowed, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage.alias_domains import AliasRules
from mtaplugin.manage.alias_domains import check as check_alias
from mtaplugin.model import Domain, MailingList, User
from mtaplugin.vocabulary.addresses import check_domain


def create(
    session: Session,
    mail_host: str,
    description: str = "",
    base_url: str = "",
    *,
    clock: Clock = system_clock,
) -> Domain:
    host = check_domain(mail_host)
    if session.scalar(select(Domain.id).where(Domain.mail_host == host)) is not None:
        raise AlreadyExists("mail_host", _("duplicate email host: {host}").format(host=host))
    other = session.scalar(select(Domain.mail_host).where(Domain.alias_domain == host))
    if other is not None:
        raise AlreadyExists(
            "mail_host",
            _("{host} is already a domain or an alias of this site ({other})").format(
                host=host, other=other
            ),
        )
    domain = Domain(mail_host=host, description=description, base_url=base_url, created_at=clock())
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
    *,
    rules: AliasRules,
) -> Domain:
    """Change what is given (None: keep).  ``alias_domain`` ("" clears it) is checked by
    ``rules`` (who asks, what the site allows) before anything changes."""
    alias = check_alias(session, domain, alias_domain, rules) if alias_domain is not None else None
    if description is not None:
        domain.description = description
    if alias_domain is not None:
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


def add_owner(
    session: Session,
    domain: Domain,
    email: str,
    *,
    by_site_admin: bool,
    clock: Clock = system_clock,
) -> None:
    from mtaplugin.manage import users

    check_owners_change(by_site_admin)
    user = users.get_or_create_for(session, email, clock)  # (not an account that only claims it)
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
