"""Bans: an exact address or a ``^regex``, on one list or (list None) site-wide.

Matching is :mod:`mtaplugin.vocabulary.bans` (the posting snapshot uses the same).
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Select, or_, select
from sqlalchemy.orm import Session

from mtaplugin.clock import Clock, system_clock
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage.patterns import address_or_regex
from mtaplugin.model import Ban, MailingList
from mtaplugin.vocabulary import bans as banlist


def _key(email: str) -> tuple[str, bool]:
    text = address_or_regex("email", email)
    return text, banlist.is_pattern(text)


def _where(mlist: MailingList | None) -> ColumnElement[bool]:
    return Ban.mailing_list_id.is_(None) if mlist is None else Ban.mailing_list_id == mlist.id


def query(mlist: MailingList | None) -> Select[Ban]:
    return select(Ban).where(_where(mlist)).order_by(Ban.id)


def find(session: Session, mlist: MailingList | None, email: str) -> Ban | None:
    try:
        key, _regex = _key(email)
    except InvalidInput:
        return None
    return session.scalar(select(Ban).where(_where(mlist), Ban.email == key))


def get(session: Session, mlist: MailingList | None, email: str) -> Ban:
    ban = find(session, mlist, email)
    if ban is None:
        raise NotFound("email", _("Email is not banned: {email}").format(email=email))
    return ban


def add(
    session: Session, mlist: MailingList | None, email: str, *, clock: Clock = system_clock
) -> Ban:
    key, is_regex = _key(email)
    if find(session, mlist, key) is not None:
        raise AlreadyExists("email", _("Address is already banned"))
    ban = Ban(
        email=key,
        is_regex=is_regex,
        mailing_list_id=None if mlist is None else mlist.id,
        created_at=clock(),
    )
    session.add(ban)
    session.flush()
    return ban


def remove(session: Session, mlist: MailingList | None, email: str) -> None:
    session.delete(get(session, mlist, email))
    session.flush()


def is_banned(session: Session, mlist: MailingList, email: str) -> bool:
    """Banned from this list or site-wide, matched as the posting rule matches: the
    address's exact ban and the ``^regex`` ones."""
    email = email.lower()
    found = session.scalars(
        select(Ban.email).where(
            or_(Ban.mailing_list_id == mlist.id, Ban.mailing_list_id.is_(None)),
            or_(Ban.email == email, Ban.email.startswith("^")),
        )
    )
    return banlist.BanList.of(found, f"the bans of list {mlist.list_id}").matches(email)


def ban_list(session: Session, mlist: MailingList) -> banlist.BanList:
    """Every ban of this list and the site's (a mass subscription checks many at once)."""
    found = session.scalars(
        select(Ban.email).where(or_(Ban.mailing_list_id == mlist.id, Ban.mailing_list_id.is_(None)))
    )
    return banlist.BanList.of(found, f"the bans of list {mlist.list_id}")
