"""The queries on the hot path, each one indexed statement.

The statements are built once, at import, with bound parameters: building a ``select()``
costs more than SQLite takes to run it.  They take a Core connection or an ORM session.

- :func:`lookup_lists`: which of the readings of a recipient is an existing list
  (``uq_mailing_lists_address``).
- :func:`regular_recipients`: the members due for regular delivery, with the preference
  fall-through member → address → user → default done in SQL (``ix_members_list_role``).
- :func:`digest_recipients`: the members due for a digest, with their kind and language.

A member in a digest mode on a list whose ``digests_enabled`` is off gets regular delivery
(the list sends no digest, and the member must not get nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    bindparam,
    false,
    func,
    or_,
    select,
    true,
)
from sqlalchemy.orm import Session

from mtaplugin.enums import DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.lists.driver import driver_insert as driver_insert
from mtaplugin.lists.driver import driver_rows
from mtaplugin.lists.kept import KeptConnections as KeptConnections
from mtaplugin.model import Address, Domain, MailingList, Member, User
from mtaplugin.vocabulary.addresses import ListAddress
from mtaplugin.vocabulary.snapshot import Recipient
from mtaplugin.vocabulary.snapshot import delivery_emails as delivery_emails
from mtaplugin.vocabulary.topics import TopicChoice


@dataclass(frozen=True)
class FoundList:
    address: ListAddress
    pk: int
    list_id: str
    generation: int = 0


DB = Connection | Session

#: a domain is named by its mail host or by its alias domain (Mailman's ``alias_domain``:
#: list@alias is list@mail_host); both columns are unique, so one domain at most
_THE_DOMAIN = or_(Domain.mail_host == bindparam("host"), Domain.alias_domain == bindparam("host"))
_DOMAIN = select(Domain.id).where(_THE_DOMAIN)
_LIST_COLUMNS = (MailingList.list_name, MailingList.id, MailingList.list_id, MailingList.generation)
# One statement per number of readings (a recipient has one or two: see
# addresses.candidates): an expanding IN costs more to prepare than SQLite takes to run it.
_LISTS = {
    n: select(*_LIST_COLUMNS).where(
        MailingList.mail_host.in_(select(Domain.mail_host).where(_THE_DOMAIN)),
        MailingList.list_name.in_([bindparam(f"n{i}") for i in range(n)]),
    )
    for n in (1, 2, 3)
}


def _conn(db: DB) -> Connection:
    return db.connection() if isinstance(db, Session) else db


def domain_exists(db: DB, mail_host: str) -> bool:
    """Whether ``mail_host`` is a list domain, or the alias domain of one."""
    return _conn(db).execute(_DOMAIN, {"host": mail_host}).first() is not None


def lookup_lists(db: DB | KeptConnections, readings: list[ListAddress]) -> list[FoundList]:
    """The readings that name an existing list, in the order given (a reading in a
    domain's alias domain names the list in that domain)."""
    if not readings:
        return []
    params: dict[str, str] = {f"n{i}": r.list_name for i, r in enumerate(readings)}
    params["host"] = readings[0].mail_host
    statement = _LISTS[len(readings)]
    if isinstance(db, KeptConnections):
        rows = db.rows(statement, params)
    else:
        rows = driver_rows(_conn(db), statement, params)
    by_name = {name: (pk, list_id, gen) for name, pk, list_id, gen in rows}
    return [FoundList(r, *by_name[r.list_name]) for r in readings if r.list_name in by_name]


def _pref(column: str, default: object) -> ColumnElement[Any]:
    return func.coalesce(
        getattr(Member, column), getattr(Address, column), getattr(User, column), default
    )


def regular_recipients(session: Session, list_pk: int) -> list[Recipient]:
    """Members with regular delivery enabled, in one query."""
    mode = _pref("delivery_mode", DeliveryMode.regular.value)
    status = _pref("delivery_status", DeliveryStatus.enabled.value)
    own = _pref("receive_own_postings", true())
    list_copy = _pref("receive_list_copy", true())
    # On the session's connection (Core): a big list's roster without the ORM's loading
    # per row; sorted here (code point order, the same on every database), not by the
    # database's collation.
    rows = (
        session.connection()
        .execute(
            select(Address.email, own, list_copy)
            .select_from(Member)
            .join(Address, Address.id == Member.address_id)
            .outerjoin(User, User.id == Address.user_id)
            .join(MailingList, MailingList.id == Member.mailing_list_id)
            .where(
                and_(
                    Member.mailing_list_id == list_pk,
                    Member.role == MemberRole.member,
                    or_(mode == DeliveryMode.regular.value, MailingList.digests_enabled == false()),
                    status == DeliveryStatus.enabled.value,
                )
            )
        )
        .all()
    )
    ordered = sorted(rows, key=lambda r: r[0])
    return [Recipient(email, bool(flag), bool(copy)) for email, flag, copy in ordered]


def topic_choices(session: Session, list_pk: int) -> dict[str, TopicChoice]:
    """The members of a list who chose topics: email → their choice."""
    rows = session.execute(
        select(Address.email, Member.topics, Member.receive_nonmatching_topics)
        .join(Address, Address.id == Member.address_id)
        .where(Member.mailing_list_id == list_pk, Member.role == MemberRole.member)
    ).all()
    return {
        email: TopicChoice(frozenset(str(t) for t in topics), bool(nonmatching))
        for email, topics, nonmatching in rows
        if topics
    }


def acknowledged(session: Session, list_pk: int) -> set[str]:
    """The members of a list whose ``acknowledge_posts`` (resolved) is on."""
    ack = _pref("acknowledge_posts", false())
    return set(
        session.scalars(
            select(Address.email)
            .select_from(Member)
            .join(Address, Address.id == Member.address_id)
            .outerjoin(User, User.id == Address.user_id)
            .where(Member.mailing_list_id == list_pk, Member.role == MemberRole.member, ack)
        )
    )


@dataclass(frozen=True)
class Reader:
    """What a member's own copy says about them: ``$user_name``, ``$user_language``."""

    name: str
    #: "" when neither the membership, the address nor the user chose one
    language: str


def readers(session: Session, list_pk: int) -> dict[str, Reader]:
    """Every member of a list: email → their name (membership, address, then user) and
    language (membership, address, then user preference)."""
    name = func.coalesce(
        func.nullif(Member.display_name, ""),
        func.nullif(Address.display_name, ""),
        func.nullif(User.display_name, ""),
        "",
    )
    language = _pref("preferred_language", "")
    rows = session.execute(
        select(Address.email, name, language)
        .select_from(Member)
        .join(Address, Address.id == Member.address_id)
        .outerjoin(User, User.id == Address.user_id)
        .where(Member.mailing_list_id == list_pk, Member.role == MemberRole.member)
    ).all()
    return {email: Reader(str(n or ""), str(lang or "")) for email, n, lang in rows}


@dataclass(frozen=True)
class DigestRecipient:
    """A member due for a digest: its address, the kind of digest and its language."""

    email: str
    mode: DeliveryMode
    language: str


def _digest_members(
    list_pk: int, any_list: bool = False
) -> tuple[ColumnElement[Any], ColumnElement[bool]]:
    """(the delivery mode, the condition) of the members due for a digest."""
    mode = _pref("delivery_mode", DeliveryMode.regular.value)
    status = _pref("delivery_status", DeliveryStatus.enabled.value)
    return mode, and_(
        Member.mailing_list_id == list_pk,
        Member.role == MemberRole.member,
        mode != DeliveryMode.regular.value,
        true() if any_list else MailingList.digests_enabled == true(),
        status == DeliveryStatus.enabled.value,
    )


def digest_recipients(
    session: Session, list_pk: int, any_list: bool = False
) -> list[DigestRecipient]:
    """Members in a digest mode whose delivery is enabled, on a list with
    ``digests_enabled`` (or on any list: ``any_list``, for the posts kept before the list
    turned digests off), in one query (a disabled member -- nomail, by bounces -- gets
    none)."""
    mode, due = _digest_members(list_pk, any_list)
    language = func.coalesce(
        Member.preferred_language,
        Address.preferred_language,
        User.preferred_language,
        MailingList.preferred_language,
    )
    rows = session.execute(
        select(Address.email, mode, language)
        .select_from(Member)
        .join(Address, Address.id == Member.address_id)
        .outerjoin(User, User.id == Address.user_id)
        .join(MailingList, MailingList.id == Member.mailing_list_id)
        .where(due)
        .order_by(Address.email)
    ).all()
    return [DigestRecipient(email, DeliveryMode(m), lang or "en") for email, m, lang in rows]


def count_digest_recipients(session: Session, list_pk: int) -> int:
    """How many members :func:`digest_recipients` gives (what a list snapshot keeps)."""
    _mode, due = _digest_members(list_pk)
    return int(
        session.scalar(
            select(func.count())
            .select_from(Member)
            .join(Address, Address.id == Member.address_id)
            .outerjoin(User, User.id == Address.user_id)
            .join(MailingList, MailingList.id == Member.mailing_list_id)
            .where(due)
        )
        or 0
    )
