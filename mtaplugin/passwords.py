"""Passwords: the one passlib context for every hash mtaplugin stores or checks.

Web log-ins, REST's ``cleartext_password``, the CLI's ``users`` commands and a list's
``moderator_password`` (the ``approved`` rule and moderation by reply) all hash and verify
here.  New hashes are argon2; bcrypt, sha512_crypt, sha256_crypt (Mailman 3's two
schemes), pbkdf2_sha256 hashes (carried over from Mailman or an older mtaplugin) and
Django's own formats (``pbkdf2_sha256$``, ``pbkdf2_sha1$``, ``argon2$``, ``bcrypt_sha256$``,
``bcrypt$``: the web passwords of a Mailman 3 suite, :mod:`mtaplugin.importers.django_web`)
are still verified, and a log-in rehashes them (:func:`needs_update`).  No SQL: the pure
posting core may import it.
"""

from __future__ import annotations

from passlib.context import CryptContext

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _

#: argon2 for new hashes; the others are only verified (and rehashed on a log-in)
PASSWORDS = CryptContext(
    schemes=[
        "argon2",
        "bcrypt",
        "sha512_crypt",
        "sha256_crypt",
        "pbkdf2_sha256",
        "django_pbkdf2_sha256",
        "django_pbkdf2_sha1",
        "django_argon2",
        "django_bcrypt_sha256",
        "django_bcrypt",
    ],
    deprecated="auto",
)
#: the longest password accepted (hashing a megabyte would be a denial of service)
MAX_LENGTH = 1024


def hash_password(cleartext: str, min_length: int = 1) -> str:
    """The argon2 hash of ``cleartext``; raises :class:`InvalidInput` naming ``password``
    when it is shorter than ``min_length`` (the web asks for 8) or too long."""
    if len(cleartext) < max(1, min_length):
        if min_length <= 1:
            raise InvalidInput("password", _("a password may not be empty"))
        raise InvalidInput(
            "password", _("a password needs at least {n} characters").format(n=min_length)
        )
    if len(cleartext) > MAX_LENGTH:
        raise InvalidInput("password", _("a password may be at most 1024 characters"))
    return str(PASSWORDS.hash(cleartext))


#: PBKDF2 rounds of a password carried in clear text from Mailman 2.1 (:func:`carried_hash`)
CARRIED_ROUNDS = 1000


def carried_hash(cleartext: str) -> str:
    """A salted hash of a password an import finds in clear text (Mailman 2.1 kept every
    member's so): PBKDF2-SHA256 with few rounds, so that a list of 10 000 members takes
    seconds, not the hours argon2 would.  It is weaker than argon2 only until the person's
    first log-in, which rehashes it (:func:`needs_update`); it was clear text before."""
    if not cleartext or len(cleartext) > MAX_LENGTH:
        raise InvalidInput("password", _("a password may be at most 1024 characters"))
    handler = PASSWORDS.handler("pbkdf2_sha256").using(rounds=CARRIED_ROUNDS)
    return str(handler.hash(cleartext))


def verify(cleartext: str, hashed: str | None) -> bool:
    """Whether ``cleartext`` matches ``hashed``; False for an empty one or an unknown
    hash format (never an exception)."""
    if not cleartext or not hashed:
        return False
    try:
        return bool(PASSWORDS.verify(cleartext, hashed))
    except (ValueError, TypeError):
        return False


def needs_update(hashed: str) -> bool:
    """Whether ``hashed`` uses an older scheme (or weaker settings) than new hashes."""
    try:
        return bool(PASSWORDS.needs_update(hashed))
    except (ValueError, TypeError):
        return False
