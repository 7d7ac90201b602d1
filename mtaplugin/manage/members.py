"""Members: add one or many, remove, list a roster."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

# (imported for its ORM hook: a member leaving digest delivery gets one last digest)
from mtaplugin.clock import Clock, system_clock
from mtaplugin.digests import store as _digest_store  # noqa: F401
from mtaplugin.enums import Action, DeliveryMode, MemberRole
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import claims
from mtaplugin.model import Address, MailingList, Member
from mtaplugin.vocabulary.addresses import normalize_email, parse_member_line

BATCH = 1000


_E = TypeVar("_E", bound=StrEnum)


def _parse_choice(kind: type[_E], value: str, field: str, message: str) -> _E:
    try:
        return kind(value.strip().lower())
    except ValueError:
        raise InvalidInput.not_one_of(field, message, value, kind) from None


def parse_role(value: str, field: str = "role") -> MemberRole:
    return _parse_choice(
        MemberRole, value, field, _("unknown role {value!r}; choose one of: {choices}")
    )


def parse_delivery_mode(value: str, field: str = "delivery_mode") -> DeliveryMode:
    return _parse_choice(
        DeliveryMode, value, field, _("unknown delivery mode {value!r}; choose one of: {choices}")
    )


#: the delivery modes that deliver: all of them (regular copies, and the digests of
#: :mod:`mtaplugin.digests`)
ACTIVE_DELIVERY_MODES = frozenset(DeliveryMode)


def check_delivery_mode(
    mode: DeliveryMode | None, field: str = "delivery_mode"
) -> DeliveryMode | None:
    """``mode`` if it delivers (None: unchanged, the default), else :class:`InvalidInput`
    naming ``field``.  Every surface that lets someone choose a delivery mode (email
    commands, web, REST, CLI) asks this before it stores one; every mode delivers now."""
    if mode is None or mode in ACTIVE_DELIVERY_MODES:
        return mode
    raise InvalidInput(field, _("unknown delivery mode {value!r}").format(value=mode))


def parse_action(value: str, field: str = "moderation_action") -> Action:
    return _parse_choice(
        Action, value, field, _("unknown action {value!r}; choose one of: {choices}")
    )


def get_or_create_address(
    session: Session, email: str, display_name: str = "", *, clock: Clock = system_clock
) -> Address:
    """The Address row for ``email`` (already normalised), created verified (at ``clock``'s
    time) if new: an administrator who adds an address vouches for it."""
    address = session.scalar(select(Address).where(Address.email == email))
    if address is None:
        address = _vouched_address(email, display_name, clock())
        session.add(address)
        session.flush()
    return address


def _vouched_address(email: str, display_name: str, now: datetime) -> Address:
    """A new address an administrator adds: verified (and registered) ``now``."""
    return Address(
        email=email,
        original_email=email,
        display_name=display_name,
        verified_on=now,
        registered_on=now,
    )


def add(
    session: Session,
    mlist: MailingList,
    email: str,
    role: MemberRole = MemberRole.member,
    display_name: str = "",
    delivery_mode: DeliveryMode | None = None,
    moderation_action: Action | None = None,
    *,
    clock: Clock = system_clock,
) -> Member:
    addr = normalize_email(email)
    address = get_or_create_address(session, addr, display_name, clock=clock)
    # a role or membership for an address that an account only claims: not that account's
    claims.drop_claim(session, address, clock())
    exists = session.scalar(
        select(Member.id).where(
            Member.mailing_list_id == mlist.id,
            Member.role == role,
            Member.address_id == address.id,
        )
    )
    if exists is not None:
        raise AlreadyExists(
            "email",
            _("{email} is already a {role} of {list}").format(
                email=addr, role=role.value, list=mlist.fqdn_listname
            ),
        )
    member = _new_member(
        mlist, role, address, display_name, delivery_mode, clock(), moderation_action
    )
    session.add(member)
    session.flush()
    return member


def _new_member(
    mlist: MailingList,
    role: MemberRole,
    address: Address,
    display_name: str,
    delivery_mode: DeliveryMode | None,
    now: datetime,
    moderation_action: Action | None = None,
) -> Member:
    return Member(
        mailing_list_id=mlist.id,
        role=role,
        address_id=address.id,
        display_name=display_name,
        delivery_mode=delivery_mode,
        moderation_action=moderation_action,
        created_at=now,
    )


@dataclass(frozen=True)
class MassResult:
    added: int
    already: int
    #: the addresses added, in the order given
    added_emails: tuple[str, ...] = ()


def validate_lines(lines: Iterable[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """Parse ``email`` / ``Name <email>`` lines; blank lines and ``#`` comments are skipped.

    Returns (entries, errors), where each error names its line number.
    """
    entries: list[tuple[str, str]] = []
    errors: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            email, name = parse_member_line(text, field=f"line {number}")
        except InvalidInput as exc:
            errors.append(str(exc))
            continue
        if email not in seen:
            seen.add(email)
            entries.append((email, name))
    return entries, errors


def add_many(
    session: Session,
    mlist: MailingList,
    entries: Sequence[tuple[str, str]],
    role: MemberRole = MemberRole.member,
    delivery_mode: DeliveryMode | None = None,
    progress: Callable[[int], object] | None = None,
    *,
    clock: Clock = system_clock,
) -> MassResult:
    """Add already-validated (email, name) entries in batches; existing members are kept."""
    added = already = 0
    added_emails: list[str] = []
    for start in range(0, len(entries), BATCH):
        batch = entries[start : start + BATCH]
        emails = [e for e, _n in batch]
        addresses = {
            a.email: a for a in session.scalars(select(Address).where(Address.email.in_(emails)))
        }
        known = [a.id for a in addresses.values()]
        now = clock()
        for email, name in batch:
            if email not in addresses:
                addresses[email] = _vouched_address(email, name, now)
                session.add(addresses[email])
        session.flush()
        # Only an address that existed before can be a member already: a new import asks
        # nothing here.  (On PostgreSQL this question, asked in every batch of a mass
        # subscribe's one long transaction, cost the server time in proportion to the
        # rows already added: 0.42 of the first batch's rate at 100 000 members.)
        existing = (
            set(
                session.scalars(
                    select(Member.address_id).where(
                        Member.mailing_list_id == mlist.id,
                        Member.role == role,
                        Member.address_id.in_(known),
                    )
                )
            )
            if known
            else set()
        )
        for email, name in batch:
            address = addresses[email]
            if address.id in existing:
                already += 1
                continue
            session.add(_new_member(mlist, role, address, name, delivery_mode, now))
            added += 1
            added_emails.append(email)
        session.flush()
        if progress is not None:
            progress(len(batch))
    return MassResult(added=added, already=already, added_emails=tuple(added_emails))


def get(session: Session, mlist: MailingList, email: str, role: MemberRole) -> Member:
    addr = normalize_email(email)
    member = session.scalar(
        select(Member)
        .join(Address, Address.id == Member.address_id)
        .where(Member.mailing_list_id == mlist.id, Member.role == role, Address.email == addr)
    )
    if member is None:
        raise NotFound(
            "email",
            _("{email} is not a {role} of {list}").format(
                email=addr, role=role.value, list=mlist.fqdn_listname
            ),
        )
    return member


def remove(session: Session, mlist: MailingList, email: str, role: MemberRole) -> None:
    session.delete(get(session, mlist, email, role))
    session.flush()


def roster(
    session: Session, mlist: MailingList, role: MemberRole | None = None
) -> list[tuple[Member, Address]]:
    query = (
        select(Member, Address)
        .join(Address, Address.id == Member.address_id)
        .where(Member.mailing_list_id == mlist.id)
        .order_by(Member.role, Address.email)
    )
    if role is not None:
        query = query.where(Member.role == role)
    return [(m, a) for m, a in session.execute(query)]


def is_member(session: Session, mlist: MailingList, email: str) -> bool:
    """Whether ``email`` (already normalised) is a member (role member) of the list."""
    return (
        session.scalar(
            select(Member.id)
            .join(Address, Address.id == Member.address_id)
            .where(
                Member.mailing_list_id == mlist.id,
                Member.role == MemberRole.member,
                Address.email == email,
            )
        )
        is not None
    )
