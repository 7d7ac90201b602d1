"""A list's header matches, kept in order (``position`` 0, 1, ...)."""

from __future__ import annotations

import re

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.enums import Action
from mtaplugin.errors import InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage.patterns import check_regex
from mtaplugin.model import HeaderMatch, MailingList


def check(header: str, pattern: str) -> tuple[str, str]:
    name = header.strip().lower()
    if not name or not re.fullmatch(r"[\x21-\x39\x3b-\x7e]+", name):
        raise InvalidInput("header", _("not a header name: {h!r}").format(h=header))
    if not pattern.strip():
        raise InvalidInput("pattern", _("may not be empty"))
    return name, check_regex("pattern", pattern)


def all_matches(session: Session, mlist: MailingList) -> list[HeaderMatch]:
    return list(
        session.scalars(
            select(HeaderMatch)
            .where(HeaderMatch.mailing_list_id == mlist.id)
            .order_by(HeaderMatch.position)
        )
    )


def get(session: Session, mlist: MailingList, position: int) -> HeaderMatch:
    match = session.scalar(
        select(HeaderMatch).where(
            HeaderMatch.mailing_list_id == mlist.id, HeaderMatch.position == position
        )
    )
    if match is None:
        raise NotFound("position", _("no header match at position {p}").format(p=position))
    return match


def add(
    session: Session,
    mlist: MailingList,
    header: str,
    pattern: str,
    action: Action | None = None,
    tag: str | None = None,
) -> HeaderMatch:
    name, pattern = check(header, pattern)
    _refuse_twins(session, mlist, name, pattern)
    last = session.scalar(
        select(func.max(HeaderMatch.position)).where(HeaderMatch.mailing_list_id == mlist.id)
    )
    match = HeaderMatch(
        mailing_list_id=mlist.id,
        position=0 if last is None else last + 1,
        header=name,
        pattern=pattern,
        action=action,
        tag=tag,
    )
    session.add(match)
    session.flush()
    return match


def _refuse_twins(
    session: Session, mlist: MailingList, name: str, pattern: str, but: HeaderMatch | None = None
) -> None:
    for hm in all_matches(session, mlist):
        if hm is not but and hm.header == name and hm.pattern == pattern:
            raise InvalidInput("pattern", _("This header match already exists"))


def change(
    session: Session,
    mlist: MailingList,
    match: HeaderMatch,
    header: str,
    pattern: str,
    action: Action | None,
    tag: str | None,
    position: int | None = None,
) -> None:
    """Give ``match`` these values (checked as :func:`add` checks them, the position
    first, so that a refused change changes nothing) and move it to ``position``."""
    name, pattern = check(header, pattern)
    _refuse_twins(session, mlist, name, pattern, but=match)
    if position is not None and not 0 <= position < len(all_matches(session, mlist)):
        raise InvalidInput("position", _("no such position: {p}").format(p=position))
    match.header, match.pattern, match.action, match.tag = name, pattern, action, tag
    if position is not None and position != match.position:
        move(session, mlist, match, position)
    session.flush()


def _renumber(session: Session, ordered: list[HeaderMatch]) -> None:
    # two steps: the (list, position) pairs are unique at every flush
    for i, hm in enumerate(ordered):
        hm.position = -1 - i
    session.flush()
    for i, hm in enumerate(ordered):
        hm.position = i
    session.flush()


def move(session: Session, mlist: MailingList, match: HeaderMatch, position: int) -> None:
    ordered = [hm for hm in all_matches(session, mlist) if hm.id != match.id]
    if position < 0 or position > len(ordered):
        raise InvalidInput("position", _("no such position: {p}").format(p=position))
    ordered.insert(position, match)
    _renumber(session, ordered)


def remove(session: Session, mlist: MailingList, position: int) -> None:
    session.delete(get(session, mlist, position))
    session.flush()
    _renumber(session, all_matches(session, mlist))


def clear(session: Session, mlist: MailingList) -> None:
    for hm in all_matches(session, mlist):
        session.delete(hm)
    session.flush()
