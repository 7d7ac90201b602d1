"""A site for the unit tests: one list domain, unique per test, with a list ``team`` and its
people (and, when asked, a list ``strict`` that refuses nonmembers' posts).  The ``site``
fixture (tests/unit/conftest.py) makes one on the module's database; a module that wants
other people overrides the ``site_roster`` fixture."""

from __future__ import annotations

import email
from dataclasses import dataclass
from email.message import Message
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.enums import Action, MemberRole
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import HeldMessage, MailingList, OutboxMessage
from tests.helpers import send_hold_notices, unique

T = TypeVar("T")

Person = tuple[str, MemberRole]


@dataclass(frozen=True)
class Roster:
    """Who is on ``team``, in the order they are added, and on ``strict`` (no list
    ``strict`` when empty)."""

    team: tuple[Person, ...] = (
        ("anne@example.com", MemberRole.member),
        ("bob@example.com", MemberRole.member),
        ("olive@example.com", MemberRole.owner),
        ("mod@example.com", MemberRole.moderator),
    )
    strict: tuple[str, ...] = ()

    @classmethod
    def members(cls, *team: str, strict: tuple[str, ...] = ()) -> Roster:
        """Only regular members on ``team``."""
        return cls(tuple((m, MemberRole.member) for m in team), strict)


@dataclass
class Site:
    sessions: sessionmaker[Session]
    host: str
    #: the database URL (for code that opens its own connection)
    url: str = ""

    def addr(self, local: str) -> str:
        return f"{local}@{self.host}"

    @property
    def address(self) -> str:
        return self.addr("team")

    @property
    def list_id(self) -> str:
        return f"team.{self.host}"

    def mlist(self, list_name: str = "team") -> MailingList:
        with self.sessions() as s:
            return lists.get(s, self.addr(list_name))

    def names(self, s: Session) -> list[str]:
        """The names of the site's lists."""
        query = select(MailingList).where(MailingList.mail_host == self.host)
        return [m.list_name for m in s.scalars(query)]

    def held(self, list_name: str = "team") -> list[HeldMessage]:
        return self.rows(HeldMessage, list_name)

    def rows(self, model: type[T], list_name: str = "team") -> list[T]:
        """The rows of ``model`` (a table with ``mailing_list_id``) of one list, in id
        order, detached."""
        with self.sessions() as s:
            pk = lists.get(s, self.addr(list_name)).id
            table: Any = model
            query = select(table).where(table.mailing_list_id == pk).order_by(table.id)
            found = list(s.scalars(query))
            s.expunge_all()
            return found

    def outbox(self, list_name: str | None = None) -> list[OutboxMessage]:
        """The outbox rows of one list, or of every list of the site, once the notices of
        the posts held so far are made, as the worker makes them a moment after each answer
        (:mod:`mtaplugin.manage.hold_notices`)."""
        send_hold_notices(self.sessions)
        with self.sessions() as s:
            names = [list_name] if list_name else self.names(s)
            ids = [lists.get(s, self.addr(n)).id for n in names]
            query = select(OutboxMessage).where(OutboxMessage.mailing_list_id.in_(ids))
            rows = list(s.scalars(query.order_by(OutboxMessage.id)))
            s.expunge_all()
            return rows

    def mails_to(self, rcpt: str) -> list[Message]:
        """The site's outbox messages to ``rcpt``, parsed."""
        return [email.message_from_bytes(r.raw) for r in self.outbox() if rcpt in r.recipients]

    def is_member(self, who: str, list_name: str = "team") -> bool:
        with self.sessions() as s:
            mlist = lists.get(s, self.addr(list_name))
            return any(a.email == who for _m, a in members.roster(s, mlist, MemberRole.member))

    def update(self, list_name: str = "team", **settings: object) -> None:
        with self.sessions.begin() as s:
            mlist = lists.get(s, self.addr(list_name))
            for key, value in settings.items():
                setattr(mlist, key, value)


def make_site(
    sessions: sessionmaker[Session],
    roster: Roster = Roster(),
    url: str = "",
    host: str = "",
    base_url: str = "",
) -> Site:
    """A new domain (``host``, or a unique one) with the lists of ``roster``, committed."""
    host = host or f"{unique('site')}.test"
    with sessions.begin() as s:
        add_domain(s, host, roster, base_url)
    return Site(sessions, host, url)


def add_domain(s: Session, host: str, roster: Roster, base_url: str = "") -> MailingList:
    """The domain ``host`` with the lists of ``roster`` in session ``s``; returns ``team``."""
    domains.create(s, host, base_url=base_url)
    team = lists.create(s, f"team@{host}")
    for address, role in roster.team:
        members.add(s, team, address, role)
    if roster.strict:
        strict = lists.create(s, f"strict@{host}")
        strict.default_nonmember_action = Action.reject
        for address in roster.strict:
            members.add(s, strict, address)
    s.flush()
    return team
