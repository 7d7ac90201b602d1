"""Domains: create, find, list, remove."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.addresses import check_domain
from mtaplugin.errors import AlreadyExists, NotFound
from mtaplugin.i18n import _
from mtaplugin.model import Domain, MailingList


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
