"""The web accounts of a Mailman 3 suite (Django's ``auth_user`` and allauth's
``account_emailaddress``) moved in with their passwords (issue 31): a person logs in here
with their Postorius password, and that first log-in rehashes it with argon2.

The web database is an SQLite file shaped as Django 4.2 and allauth make it, with hashes
made by passlib's Django handlers (Django's own formats)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from passlib.hash import (
    django_argon2,
    django_bcrypt_sha256,
    django_pbkdf2_sha256,
    sha512_crypt,
)
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import passwords
from mtaplugin.importers import django_web, mm3users, password_notice
from mtaplugin.importers.mm3rest import UserData
from mtaplugin.manage import users
from mtaplugin.model import Address, OutboxMessage, User
from tests.helpers import unique

DDL = """
CREATE TABLE "auth_user" (
    "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "password" varchar(128) NOT NULL,
    "last_login" datetime NULL, "is_superuser" bool NOT NULL,
    "username" varchar(150) NOT NULL UNIQUE, "last_name" varchar(150) NOT NULL,
    "email" varchar(254) NOT NULL, "is_staff" bool NOT NULL, "is_active" bool NOT NULL,
    "date_joined" datetime NOT NULL, "first_name" varchar(150) NOT NULL);
CREATE TABLE "account_emailaddress" (
    "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "verified" bool NOT NULL,
    "primary" bool NOT NULL,
    "user_id" integer NOT NULL REFERENCES "auth_user" ("id") DEFERRABLE INITIALLY DEFERRED,
    "email" varchar(254) NOT NULL);
"""
PASSWORD = "Postorius-pa55"


def web_db(path: Path, rows: list[tuple[str, str, bool, list[tuple[str, bool, bool]]]]) -> str:
    """A Django web database with ``(username, hash, is_superuser, addresses)`` rows."""
    db = path / "mailman3web.db"
    con = sqlite3.connect(db)
    con.executescript(DDL)
    for n, (username, hashed, superuser, addresses) in enumerate(rows, 1):
        con.execute(
            "INSERT INTO auth_user VALUES (?, ?, NULL, ?, ?, 'Person', ?, ?, 1,"
            " '2024-01-02 03:04:05', ?)",
            (
                n,
                hashed,
                superuser,
                username,
                addresses[0][0] if addresses else "",
                superuser,
                username,
            ),
        )
        for email, verified, primary in addresses:
            con.execute(
                'INSERT INTO account_emailaddress (verified, "primary", user_id, email)'
                " VALUES (?, ?, ?, ?)",
                (verified, primary, n, email),
            )
    con.commit()
    con.close()
    return f"sqlite:///{db}"


def login(session: Session, email: str, password: str = PASSWORD) -> User | None:
    return users.authenticate(session, "192.0.2.9", email, password)


@pytest.mark.parametrize(
    "hasher",
    [django_pbkdf2_sha256, django_argon2, django_bcrypt_sha256],
    ids=["pbkdf2_sha256", "argon2", "bcrypt_sha256"],
)
def test_a_person_logs_in_with_their_postorius_password_and_it_is_rehashed(
    txn_session: Session, tmp_path: Path, hasher: object
) -> None:
    email = unique("ann") + "@example.net"
    hashed = hasher.hash(PASSWORD)  # type: ignore[attr-defined]
    accounts = django_web.read(web_db(tmp_path, [("ann", hashed, False, [(email, True, True)])]))
    notes: list[str] = []
    assert [django_web.apply_account(txn_session, a, notes) for a in accounts] == [True]
    assert notes == []
    user = txn_session.scalar(select(User).join(Address).where(Address.email == email))
    assert user is not None and user.password == hashed  # stored as Django wrote it
    assert login(txn_session, email, "wrong password") is None
    assert login(txn_session, email) is user
    assert passwords.PASSWORDS.identify(user.password) == "argon2"  # rehashed at log-in
    assert login(txn_session, email) is user
    # A second import keeps the password the person now has here.
    assert django_web.apply_account(txn_session, accounts[0], notes) is False
    assert passwords.PASSWORDS.identify(user.password) == "argon2"


def test_the_web_password_replaces_the_core_hash_and_a_core_rerun_keeps_it(
    txn_session: Session, tmp_path: Path
) -> None:
    """django-mailman3 made the core user with a password nobody knows; the core import
    carried that hash.  The web account replaces it, and running the core import again
    (without the web database) does not put it back."""
    email = unique("bob") + "@example.net"
    core = UserData(
        user={
            "user_id": "0" * 31 + "b",
            "display_name": "Bob",
            "password": sha512_crypt.hash("Bob"),
        },
        preferences={},
        preferred_address=None,
        addresses=[({"email": email, "verified_on": "2024-01-02T03:04:05"}, {})],
    )
    notes: list[str] = []
    mm3users.apply_user(txn_session, core, notes)
    assert login(txn_session, email) is None
    url = web_db(
        tmp_path, [("bob", django_pbkdf2_sha256.hash(PASSWORD), True, [(email, True, True)])]
    )
    (account,) = django_web.read(url)
    assert django_web.apply_account(txn_session, account, notes)
    assert mm3users.apply_user(txn_session, core, notes) is False
    user = login(txn_session, email)
    assert user is not None and user.user_id == "0" * 31 + "b"
    assert user.is_server_owner  # a Django superuser
    assert txn_session.scalar(select(User).where(User.id == user.id)) is user


def test_verified_addresses_are_linked_and_the_unverified_and_social_are_not(
    txn_session: Session, tmp_path: Path
) -> None:
    carol, other, unverified, social = (
        unique(n) + "@example.net" for n in ("carol", "carol2", "carol3", "dave")
    )
    url = web_db(
        tmp_path,
        [
            (
                "carol",
                django_argon2.hash(PASSWORD),
                False,
                [(carol, True, False), (other, True, True), (unverified, False, False)],
            ),
            ("dave", "!" + "x" * 40, False, [(social, True, True)]),
            ("eve", django_argon2.hash(PASSWORD), False, [("eve@example.net", False, True)]),
            (
                "scrypt",
                "scrypt$16384$salt$8$1$aGFzaA==",
                False,
                [(unique("s") + "@x.test", True, True)],
            ),
        ],
    )
    notes: list[str] = []
    for account in django_web.read(url):
        django_web.apply_account(txn_session, account, notes)
    user = login(txn_session, carol)
    assert user is not None and login(txn_session, other) is user
    assert sorted(a.email for a in user.addresses) == sorted([carol, other])
    dave = txn_session.scalar(select(User).join(Address).where(Address.email == social))
    assert dave is not None and dave.password is None
    text = "\n".join(notes)
    assert f"web user {social}: no password on the web" in text
    assert "web user eve: no verified address" in text
    assert "a password hash this side cannot check" in text  # Django's scrypt


def test_a_dumpdata_file_is_read_like_the_database(tmp_path: Path) -> None:
    hashed = django_pbkdf2_sha256.hash(PASSWORD)
    dump = [
        {
            "model": "auth.user",
            "pk": 7,
            "fields": {
                "username": "fay",
                "password": hashed,
                "is_superuser": False,
                "is_staff": True,
                "is_active": True,
                "email": "fay@example.net",
                "first_name": "Fay",
                "last_name": "Person",
            },
        },
        {
            "model": "account.emailaddress",
            "pk": 1,
            "fields": {"user": 7, "email": "fay@example.net", "verified": True, "primary": True},
        },
        {"model": "sessions.session", "pk": "x", "fields": {}},
    ]
    path = tmp_path / "users.json"
    path.write_text(json.dumps(dump), encoding="utf-8")
    (account,) = django_web.read(str(path))
    assert (account.username, account.password, account.display_name) == (
        "fay",
        hashed,
        "Fay Person",
    )
    assert account.verified == ["fay@example.net"] and account.is_staff


def test_a_social_log_in_account_is_told_once_by_mail_how_to_set_a_password(
    txn_session: Session, tmp_path: Path
) -> None:
    email = unique("gus") + "@example.net"
    url = web_db(tmp_path, [("gus", "!" + "y" * 40, False, [(email, True, True)])])
    (account,) = django_web.read(url)

    def notify(to: str) -> bool:
        return password_notice.send_once(
            txn_session, to, "postmaster@site.test", "https://lists.test/reset"
        )

    for _run in range(2):  # a second import run mails nothing more
        django_web.apply_account(txn_session, account, [], notify)
    sent = [m for m in txn_session.scalars(select(OutboxMessage)).all() if m.recipients == [email]]
    assert len(sent) == 1
    text = sent[0].raw.decode()
    assert "Subject: Set a password for your mailing lists" in text
    assert "https://lists.test/reset" in text
