"""Users and their addresses: create, find, passwords, preferred address, web log-ins.

Passwords are hashed and checked by :mod:`mtaplugin.passwords` (argon2 for new ones).
Failed web log-ins are counted in the audit log by :mod:`mtaplugin.manage.login_limit`
(per client and account, per client, and a slowdown per account).
"""

from __future__ import annotations

from datetime import datetime
from functools import cache

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from mtaplugin import passwords
from mtaplugin.clock import Clock, system_clock
from mtaplugin.enums import MemberRole
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import claims, login_limit
from mtaplugin.manage.login_limit import MAX_FAILURES as MAX_FAILURES
from mtaplugin.manage.login_limit import WINDOW as WINDOW
from mtaplugin.manage.login_limit import LockedOut as LockedOut
from mtaplugin.manage.members import get_or_create_address
from mtaplugin.model import Address, Domain, Member, User, domain_owners
from mtaplugin.vocabulary.addresses import normalize_email

#: a password needs this many characters: on the web, from ``mtaplugin users`` and for a
#: new password through REST (``PATCH /users/{id}``); the site admin's ``POST /users`` and
#: imports take any
MIN_PASSWORD = 8


def hash_password(cleartext: str, min_length: int = 1) -> str:
    return passwords.hash_password(cleartext, min_length)


def check_password(user: User, cleartext: str) -> bool:
    return passwords.verify(cleartext, user.password)


def find_address(session: Session, email: str) -> Address | None:
    try:
        addr = normalize_email(email)
    except InvalidInput:
        return None
    return session.scalar(select(Address).where(Address.email == addr))


def get_address(session: Session, email: str) -> Address:
    address = find_address(session, email)
    if address is None:
        raise NotFound("email", _("no such address: {email}").format(email=email))
    return address


def get(session: Session, key: str) -> User:
    """A user by user_id (32 hex digits) or by one of its email addresses."""
    user = None
    if "@" in key:
        address = find_address(session, key)
        user = address.user if address is not None else None
    else:
        user = session.scalar(select(User).where(User.user_id == key.strip().lower()))
    if user is None:
        raise NotFound("user", _("no such user: {key}").format(key=key))
    return user


def create(
    session: Session,
    email: str | None,
    password: str | None = None,
    display_name: str = "",
    is_server_owner: bool = False,
    verified: bool = False,
    *,
    clock: Clock = system_clock,
) -> User:
    """A user, with ``email`` if given (a new address, or one without a user); the address
    is ``verified`` when the caller vouches for it (the site admin giving a log-in)."""
    now = clock()
    user = User(display_name=display_name or "", is_server_owner=is_server_owner, created_on=now)
    if password:
        user.password = hash_password(password)
    address = None
    if email:
        addr = normalize_email(email)
        address = session.scalar(select(Address).where(Address.email == addr))
        if address is not None and verified:
            claims.drop_claim(session, address, clock())
        if address is not None and address.user_id is not None:
            raise AlreadyExists("email", _("address already in use: {email}").format(email=addr))
    session.add(user)
    session.flush()
    if email:
        if address is None:
            address = Address(
                email=normalize_email(email),
                original_email=email.strip(),
                display_name=display_name or "",
                registered_on=now,
            )
            session.add(address)
        address.user_id = user.id
        if verified:
            address.verified_on = address.verified_on or now
        session.flush()
    return user


def get_or_create_for(session: Session, email: str, clock: Clock = system_clock) -> User:
    """The user of ``email``, created (without a password) if the address has none; a new
    address is verified at ``clock``'s time."""
    addr = normalize_email(email)
    address = session.scalar(select(Address).where(Address.email == addr))
    if address is not None:
        claims.drop_claim(session, address, clock())
    if address is not None and address.user is not None:
        return address.user
    now = clock()
    if address is None:
        address = Address(
            email=addr, original_email=email.strip(), verified_on=now, registered_on=now
        )
        session.add(address)
    user = new_user_for(session, address, now)
    session.flush()
    return user


def new_user_for(session: Session, address: Address, now: datetime, display_name: str = "") -> User:
    """A new user (without a password) created ``now`` for ``address``, which it owns."""
    user = User(display_name=display_name, created_on=now)
    session.add(user)
    session.flush()
    address.user_id = user.id
    return user


def add_address(
    session: Session,
    user: User,
    email: str,
    display_name: str = "",
    absorb: bool = False,
    *,
    clock: Clock = system_clock,
) -> Address:
    addr = normalize_email(email)
    address = session.scalar(select(Address).where(Address.email == addr))
    if address is not None:
        if address.user_id == user.id:
            raise AlreadyExists("email", _("address already registered: {e}").format(e=addr))
        if address.user_id is not None and not absorb:
            raise AlreadyExists("email", _("address belongs to other user: {e}").format(e=addr))
    else:
        address = Address(
            email=addr,
            original_email=email.strip(),
            display_name=display_name,
            registered_on=clock(),
        )
        session.add(address)
    address.user_id = user.id
    session.flush()
    return address


def set_preferred(session: Session, user: User, email: str) -> Address:
    address = get_address(session, email)
    if address.user_id != user.id:
        raise InvalidInput("email", _("address is not controlled by user: {e}").format(e=email))
    if address.verified_on is None:
        raise InvalidInput("email", _("unverified address: {e}").format(e=address.email))
    user.preferred_address_id = address.id
    session.flush()
    return address


def delete(session: Session, user: User) -> None:
    for address in list(user.addresses):
        address.user_id = None
    session.delete(user)
    session.flush()


# --- web log-ins ------------------------------------------------------------------------
def user_by_email(session: Session, email: str, verified: bool = False) -> User | None:
    """The user owning ``email`` (only through a verified address: ``verified``)."""
    try:
        addr = normalize_email(email)
    except InvalidInput:
        return None
    query = select(User).join(Address, Address.user_id == User.id).where(Address.email == addr)
    if verified:
        query = query.where(Address.verified_on.is_not(None))
    return session.scalar(query)


def user_by_id(session: Session, user_id: str) -> User | None:
    return session.scalar(select(User).where(User.user_id == user_id))


def add_user(
    session: Session,
    email: str,
    password: str,
    display_name: str = "",
    site_admin: bool = False,
    *,
    clock: Clock = system_clock,
) -> User:
    """A user with a log-in password, owning ``email`` (the address is created verified if
    new); raises :class:`InvalidInput` when the address already has a user with one."""
    hashed = hash_password(password, MIN_PASSWORD)
    address = get_or_create_address(session, normalize_email(email), display_name, clock=clock)
    # the administrator who gives the address a log-in vouches for it
    claims.vouch(session, address, clock())
    if address.user_id is not None:
        user = session.get(User, address.user_id)
        assert user is not None
        if user.password:
            raise InvalidInput("email", _("{email} already has a user").format(email=address.email))
    else:
        user = new_user_for(session, address, clock(), display_name)
    user.password = hashed
    user.is_server_owner = user.is_server_owner or site_admin
    user.preferred_address_id = user.preferred_address_id or address.id
    session.flush()
    return user


def set_password(session: Session, email: str, password: str) -> User:
    user = user_by_email(session, email)
    if user is None:
        raise NotFound("email", _("no user has the address {email}").format(email=email))
    user.password = hash_password(password, MIN_PASSWORD)
    session.flush()
    return user


@cache
def _dummy_hash() -> str:
    """Verified against when the address is unknown, so that both cases cost the same."""
    return passwords.hash_password("not a password of anyone")


def authenticate(
    session: Session, ip: str, email: str, password: str, clock: Clock = system_clock
) -> User | None:
    """The user for a right email (any verified address of the user) and password, else
    None (and the failure is counted).

    Raises :class:`LockedOut` when the log-in limit (:mod:`~mtaplugin.manage.login_limit`)
    refuses this try; the password is not checked then.  A hash of an older scheme is
    replaced by an argon2 one."""
    now = clock()
    login_limit.check(session, ip, email, now)
    user = user_by_email(session, email, verified=True)
    ok = False
    if user is not None and user.password:
        ok = passwords.verify(password, user.password)
    else:
        passwords.verify(password, _dummy_hash())
    if not ok:
        login_limit.record_failure(session, ip, email, now)
        return None
    assert user is not None and user.password is not None
    if passwords.needs_update(user.password):
        user.password = hash_password(password)
    return user


def owned_domains(session: Session, user: User) -> frozenset[str]:
    """The mail hosts of the domains ``user`` owns."""
    return frozenset(
        session.scalars(
            select(Domain.mail_host)
            .join(domain_owners, domain_owners.c.domain_id == Domain.id)
            .where(domain_owners.c.user_id == user.id)
        )
    )


def list_roles(
    session: Session, user: User, roles: tuple[MemberRole, ...] = tuple(MemberRole)
) -> dict[MemberRole, frozenset[int]]:
    """For each of ``roles``, the lists (primary keys) where ``user`` holds it: as the user,
    or through one of its verified addresses (an address added to an account but not
    verified yet grants nothing: it might be somebody else's)."""
    rows = session.execute(
        select(Member.mailing_list_id, Member.role)
        .join(Address, Address.id == Member.address_id)
        .where(
            or_(
                (Address.user_id == user.id) & Address.verified_on.is_not(None),
                Member.user_id == user.id,
            ),
            Member.role.in_(roles),
        )
    ).all()
    return {role: frozenset(pk for pk, held in rows if held == role) for role in roles}
