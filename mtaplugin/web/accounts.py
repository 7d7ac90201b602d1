"""Web accounts: argon2 passwords (passlib), users by email, the login rate limit.

Failed log-ins are written to the audit log (``web.login_failed``, actor ``IP email``);
after :data:`MAX_FAILURES` within :data:`WINDOW`, that address is refused from that IP
until the window has passed, without checking the password.  Being in SQL, the limit holds
across gunicorn workers and mail hosts.
"""

from __future__ import annotations

from datetime import timedelta

from passlib.context import CryptContext
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.errors import InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage.members import get_or_create_address
from mtaplugin.model import Address, AuditEntry, User
from mtaplugin.model.base import utcnow
from mtaplugin.posting.addresses import normalize_email

#: new hashes are argon2; older schemes are still verified
PASSWORDS = CryptContext(schemes=["argon2", "bcrypt", "pbkdf2_sha256"], deprecated="auto")
MAX_FAILURES = 5
WINDOW = timedelta(minutes=15)
MIN_PASSWORD = 8
#: a hash to verify against when the address is unknown, so that both cases cost the same
_DUMMY_HASH = PASSWORDS.hash("not a password of anyone")


def hash_password(cleartext: str) -> str:
    if len(cleartext) < MIN_PASSWORD:
        raise InvalidInput(
            "password",
            _("a password needs at least {n} characters").format(n=MIN_PASSWORD),
        )
    if len(cleartext) > 1024:
        raise InvalidInput("password", _("a password may be at most 1024 characters"))
    return PASSWORDS.hash(cleartext)


def user_by_email(session: Session, email: str) -> User | None:
    try:
        addr = normalize_email(email)
    except InvalidInput:
        return None
    return session.scalar(
        select(User).join(Address, Address.user_id == User.id).where(Address.email == addr)
    )


def user_by_id(session: Session, user_id: str) -> User | None:
    return session.scalar(select(User).where(User.user_id == user_id))


def add_user(
    session: Session,
    email: str,
    password: str,
    display_name: str = "",
    site_admin: bool = False,
) -> User:
    """A user with a password, owning ``email`` (the address is created verified if new)."""
    hashed = hash_password(password)
    address = get_or_create_address(session, normalize_email(email), display_name)
    if address.user_id is not None:
        user = session.get(User, address.user_id)
        assert user is not None
        if user.password:
            raise InvalidInput("email", _("{email} already has a user").format(email=address.email))
    else:
        user = User(display_name=display_name)
        session.add(user)
        session.flush()
        address.user_id = user.id
    user.password = hashed
    user.is_server_owner = user.is_server_owner or site_admin
    user.preferred_address_id = user.preferred_address_id or address.id
    session.flush()
    return user


def set_password(session: Session, email: str, password: str) -> User:
    user = user_by_email(session, email)
    if user is None:
        raise NotFound("email", _("no user has the address {email}").format(email=email))
    user.password = hash_password(password)
    session.flush()
    return user


def _limit_key(ip: str, email: str) -> str:
    return f"{ip} {email.strip().lower()}"[:320]


def is_locked_out(session: Session, ip: str, email: str) -> bool:
    since = utcnow() - WINDOW
    failures = session.scalar(
        select(func.count(AuditEntry.id)).where(
            AuditEntry.action == "web.login_failed",
            AuditEntry.actor == _limit_key(ip, email),
            AuditEntry.at > since,
        )
    )
    return (failures or 0) >= MAX_FAILURES


def authenticate(session: Session, ip: str, email: str, password: str) -> User | None:
    """The user for a right email and password, else None (and the failure is counted).

    Raises :class:`LockedOut` when this IP failed too often for this address."""
    if is_locked_out(session, ip, email):
        raise LockedOut()
    user = user_by_email(session, email)
    ok = False
    if user is not None and user.password:
        try:
            ok = PASSWORDS.verify(password, user.password)
        except (ValueError, TypeError):
            ok = False
    else:
        PASSWORDS.verify(password, _DUMMY_HASH)
    if not ok:
        session.add(
            AuditEntry(
                actor=_limit_key(ip, email),
                action="web.login_failed",
                detail={"email": email[:320], "ip": ip},
            )
        )
        session.flush()
        return None
    assert user is not None and user.password  # ok: the password was verified
    if PASSWORDS.needs_update(user.password):
        user.password = PASSWORDS.hash(password)
    return user


class LockedOut(Exception):
    """Too many failed log-ins for this address from this IP."""
