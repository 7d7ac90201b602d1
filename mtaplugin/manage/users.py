"""Users and their addresses: create, find, passwords (argon2), preferred address."""

from __future__ import annotations

from passlib.context import CryptContext
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.model import Address, User
from mtaplugin.model.base import utcnow
from mtaplugin.posting.addresses import normalize_email

#: new hashes are argon2; the others are verified (hashes carried over from elsewhere)
PASSWORDS = CryptContext(schemes=["argon2", "bcrypt", "sha512_crypt", "pbkdf2_sha256"])


def hash_password(cleartext: str) -> str:
    if not cleartext:
        raise InvalidInput("password", _("a password may not be empty"))
    if len(cleartext) > 1024:
        raise InvalidInput("password", _("a password may be at most 1024 characters"))
    return PASSWORDS.hash(cleartext)


def check_password(user: User, cleartext: str) -> bool:
    if not user.password or not cleartext:
        return False
    try:
        return bool(PASSWORDS.verify(cleartext, user.password))
    except (ValueError, TypeError):
        return False


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
) -> User:
    user = User(display_name=display_name or "", is_server_owner=is_server_owner)
    if password:
        user.password = hash_password(password)
    address = None
    if email:
        addr = normalize_email(email)
        address = session.scalar(select(Address).where(Address.email == addr))
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
            )
            session.add(address)
        address.user_id = user.id
        session.flush()
    return user


def get_or_create_for(session: Session, email: str) -> User:
    """The user of ``email``, created (without a password) if the address has none."""
    addr = normalize_email(email)
    address = session.scalar(select(Address).where(Address.email == addr))
    if address is not None and address.user is not None:
        return address.user
    user = User()
    session.add(user)
    session.flush()
    if address is None:
        address = Address(email=addr, original_email=email.strip(), verified_on=utcnow())
        session.add(address)
    address.user_id = user.id
    session.flush()
    return user


def add_address(
    session: Session, user: User, email: str, display_name: str = "", absorb: bool = False
) -> Address:
    addr = normalize_email(email)
    address = session.scalar(select(Address).where(Address.email == addr))
    if address is not None:
        if address.user_id == user.id:
            raise AlreadyExists("email", _("address already registered: {e}").format(e=addr))
        if address.user_id is not None and not absorb:
            raise AlreadyExists("email", _("address belongs to other user: {e}").format(e=addr))
    else:
        address = Address(email=addr, original_email=email.strip(), display_name=display_name)
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
