"""The web accounts of a Mailman 3 suite (Postorius and HyperKitty, through Django and
django-allauth) moved in with their passwords.

On a stock suite the password a person logs in with lives in Django's ``auth_user``, not in
Mailman core (django-mailman3 creates the core user with a password nobody knows).  This
module reads ``auth_user`` and allauth's ``account_emailaddress``, from the web database
(an SQLAlchemy URL: ``sqlite:////var/lib/mailman3/web/mailman3web.db``,
``postgresql://...``) or from a ``django-admin dumpdata auth.user account.emailaddress``
file, and writes each account onto the user here who has one of its verified addresses
(made by the core import before), or a new user.

The hash is stored as Django wrote it: :data:`mtaplugin.passwords.PASSWORDS` checks
Django's ``pbkdf2_sha256``, ``pbkdf2_sha1``, ``argon2``, ``bcrypt_sha256`` and ``bcrypt``
formats, and the first log-in here replaces it with an argon2 hash.  What is carried:

- the password hash (not for an inactive account, nor one whose hash cannot be checked
  here: Django's ``scrypt``, or an account with no usable password, as a social log-in
  has; each is named in a note);
- allauth's verified addresses: linked to the user and marked verified (an address that
  belongs to another user here stays with that user, with a note);
- the superuser flag: the user becomes a server owner (never the other way round).

An account with no usable password (a social log-in) is told by mail, once, how to set a
password here.
  Django's ``is_staff`` has no counterpart (staff who are not superusers see nothing more
  in Postorius either) and is not carried.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from mtaplugin import passwords
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.model import Address, User
from mtaplugin.model.base import utcnow
from mtaplugin.posting.addresses import normalize_email


@dataclass
class WebAccount:
    """One row of Django's ``auth_user`` with its allauth addresses."""

    username: str
    password: str
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    is_superuser: bool = False
    is_staff: bool = False
    is_active: bool = True
    #: allauth's addresses: (email, verified, primary)
    addresses: list[tuple[str, bool, bool]] = field(default_factory=list)

    @property
    def verified(self) -> list[str]:
        """The verified addresses, the primary one first."""
        rows = sorted(self.addresses, key=lambda a: not a[2])
        return [email for email, ok, _primary in rows if ok]

    @property
    def display_name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()


def read(source: str) -> list[WebAccount]:
    """The accounts of the web database at ``source``: a ``dumpdata`` JSON file, or an
    SQLAlchemy database URL.  Raises :class:`InvalidInput` naming ``web-db``."""
    path = Path(source)
    if "://" not in source:
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise InvalidInput(
                "web-db", _("cannot read {path}: {error}").format(path=source, error=e.strerror)
            ) from None
        except ValueError as e:
            raise InvalidInput(
                "web-db", _("{path}: not JSON: {error}").format(path=source, error=e)
            ) from None
        return from_dumpdata(loaded)
    try:
        engine = create_engine(source)
        with engine.connect() as conn:
            users = [dict(r._mapping) for r in conn.execute(text("SELECT * FROM auth_user"))]
            try:
                emails = [
                    dict(r._mapping)
                    for r in conn.execute(
                        text('SELECT user_id, email, verified, "primary" FROM account_emailaddress')
                    )
                ]
            except SQLAlchemyError:
                emails = []  # a suite without allauth's table
        engine.dispose()
    except SQLAlchemyError as e:
        raise InvalidInput(
            "web-db",
            _("cannot read Django's users from {url}: {error}").format(
                url=source, error=str(e).splitlines()[0]
            ),
        ) from None
    return _accounts(users, emails)


def from_dumpdata(objects: Any) -> list[WebAccount]:
    """The accounts of a ``dumpdata`` document (other models in it are skipped)."""
    if not isinstance(objects, list):
        raise InvalidInput("web-db", _("a dumpdata file holds a JSON array"))
    users, emails = [], []
    for obj in objects:
        if not isinstance(obj, dict) or not isinstance(obj.get("fields"), dict):
            continue
        fields = dict(obj["fields"])
        if obj.get("model") == "auth.user":
            users.append({"id": obj.get("pk"), **fields})
        elif obj.get("model") == "account.emailaddress":
            emails.append({"user_id": fields.get("user"), **fields})
    return _accounts(users, emails)


def _accounts(users: list[dict[str, Any]], emails: list[dict[str, Any]]) -> list[WebAccount]:
    by_user: dict[Any, list[tuple[str, bool, bool]]] = {}
    for row in emails:
        by_user.setdefault(row.get("user_id"), []).append(
            (str(row.get("email") or ""), bool(row.get("verified")), bool(row.get("primary")))
        )
    return [
        WebAccount(
            username=str(u.get("username") or ""),
            password=str(u.get("password") or ""),
            email=str(u.get("email") or ""),
            first_name=str(u.get("first_name") or ""),
            last_name=str(u.get("last_name") or ""),
            is_superuser=bool(u.get("is_superuser")),
            is_staff=bool(u.get("is_staff")),
            is_active=bool(u.get("is_active", True)),
            addresses=by_user.get(u.get("id"), []),
        )
        for u in users
    ]


def usable(hashed: str) -> bool:
    """Whether ``hashed`` is a password hash this side checks (Django marks an account
    without a usable password with a leading ``!``)."""
    if not hashed or hashed.startswith("!"):
        return False
    try:
        return passwords.PASSWORDS.identify(hashed) is not None
    except (ValueError, TypeError):
        return False


def is_django_hash(hashed: str | None) -> bool:
    """Whether ``hashed`` is in one of Django's formats (carried from the web database)."""
    try:
        scheme = passwords.PASSWORDS.identify(hashed or "")
    except (ValueError, TypeError):
        return False
    return bool(scheme and str(scheme).startswith("django_"))


def apply_account(
    session: Session,
    account: WebAccount,
    notes: list[str],
    notify: Callable[[str], bool] | None = None,
) -> bool:
    """Write one web account here; whether anything changed.  ``notify(email)`` is called
    for an account that has no password on the web nor here (a social log-in): it mails
    the person, once, how to set one (:mod:`mtaplugin.importers.password_notice`)."""
    emails = []
    for email in account.verified:
        try:
            emails.append(normalize_email(email))
        except InvalidInput:
            notes.append(
                _("web user {name}: {email!r} is not an address; left out").format(
                    name=account.username, email=email
                )
            )
    who = emails[0] if emails else account.username
    if not emails:
        notes.append(
            _("web user {name}: no verified address; not carried").format(name=account.username)
        )
        return False
    found = session.scalars(select(Address).where(Address.email.in_(emails))).all()
    user = next((a.user for a in found if a.user is not None), None)
    changed = False
    if user is None:
        user = User(display_name=account.display_name)
        session.add(user)
        session.flush()
        changed = True
    by_email = {a.email: a for a in found}
    for email in emails:
        address = by_email.get(email)
        if address is None:
            address = Address(email=email, original_email=email, user_id=user.id)
            session.add(address)
            changed = True
        elif address.user_id is None:
            address.user_id = user.id
            changed = True
        elif address.user_id != user.id:
            notes.append(
                _("{email} belongs to another user here; left with that user").format(email=email)
            )
            continue
        if address.verified_on is None:
            address.verified_on = utcnow()
            changed = True
    if account.is_superuser and not user.is_server_owner:
        user.is_server_owner = True
        changed = True
    changed |= _password(user, account, who, notes)
    session.flush()
    social = account.is_active and (not account.password or account.password.startswith("!"))
    if notify is not None and social and not user.password:
        changed |= notify(who)
    return changed


def _password(user: User, account: WebAccount, who: str, notes: list[str]) -> bool:
    hashed = account.password
    if not account.is_active:
        notes.append(
            _("web user {email}: inactive in Django; no password carried").format(email=who)
        )
        return False
    if not usable(hashed):
        if hashed.startswith("!") or not hashed:
            notes.append(
                _(
                    "web user {email}: no password on the web (a social log-in); "
                    'they set one with "forgot password"'
                ).format(email=who)
            )
        else:
            notes.append(
                _("user {email}: a password hash this side cannot check; set a new one").format(
                    email=who
                )
            )
        return False
    # A password set or rehashed here (argon2) stays: the person has used mtaplugin since.
    current = user.password
    if current and not passwords.needs_update(current):
        return False
    if current == hashed:
        return False
    user.password = hashed
    return True
