"""The limit on failed web log-ins, in SQL so that it holds across gunicorn workers and
mail hosts.

Each failure is a row of the audit log (``web.login_failed``, actor ``CLIENT ACCOUNT``):
the client's IP address (an IPv6 address's /64) and the account's address as the log-in
looks it up (:func:`~mtaplugin.vocabulary.addresses.normalize_email`, so
``x1 <victim@example.org>`` and ``VICTIM@example.org`` count as ``victim@example.org``).
Within :data:`WINDOW`:

- one client that failed :data:`MAX_FAILURES` times for one account is refused for that
  account (other clients, the account's owner among them, are not);
- one client that failed :data:`CLIENT_MAX_FAILURES` times, all accounts together, is
  refused for every account;
- an account that failed :data:`ACCOUNT_FREE_FAILURES` times, from all clients together,
  slows down: the next try waits 1 second after the last failure, then 2, 4 ... up to
  :data:`MAX_DELAY`.  It is never locked: whoever comes after the wait is heard.

A refused try does not check the password (no argon2 is spent on it) and is not counted.
"""

from __future__ import annotations

import ipaddress
import math
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from mtaplugin.errors import InvalidInput
from mtaplugin.model import AuditEntry
from mtaplugin.vocabulary.addresses import normalize_email

ACTION = "web.login_failed"
WINDOW = timedelta(minutes=15)
#: failures of one client for one account
MAX_FAILURES = 5
#: failures of one client for all accounts
CLIENT_MAX_FAILURES = 30
#: failures of one account, all clients, before it slows down
ACCOUNT_FREE_FAILURES = 10
#: the longest wait between two tries of an account that slowed down
MAX_DELAY = timedelta(minutes=1)


class Why(StrEnum):
    #: this client, this account: :data:`MAX_FAILURES`
    account = "account"
    #: this client, every account: :data:`CLIENT_MAX_FAILURES`
    client = "client"
    #: the account slowed down: wait :attr:`LockedOut.retry_after` seconds
    slowed = "slowed"


class LockedOut(Exception):
    """This try is refused without checking the password."""

    def __init__(self, why: Why, retry_after: int) -> None:
        super().__init__(why.value)
        self.why = why
        #: seconds until a try may be heard
        self.retry_after = retry_after


def account_key(email: str) -> str:
    """The account a log-in names, as the user lookup reads it."""
    try:
        return normalize_email(email)
    except InvalidInput:
        return email.strip().lower()[:254]


def client_key(ip: str) -> str:
    """An IPv4 address, or an IPv6 address's /64 (one host has a whole /64 to pick from)."""
    try:
        found = ipaddress.ip_address(ip.strip())
    except ValueError:
        return ip.strip()[:45] or "-"
    if isinstance(found, ipaddress.IPv6Address):
        return ipaddress.ip_network(f"{found}/64", strict=False).compressed
    return found.compressed


def _failures(
    session: Session, since: datetime, *where: ColumnElement[bool]
) -> tuple[int, datetime | None]:
    count, last = session.execute(
        select(func.count(AuditEntry.id), func.max(AuditEntry.at)).where(
            AuditEntry.action == ACTION, AuditEntry.at > since, *where
        )
    ).one()
    return int(count or 0), last


def check(session: Session, ip: str, email: str, now: datetime) -> None:
    """Raise :class:`LockedOut` when a log-in of ``email`` from ``ip`` may not be tried now."""
    client, account = client_key(ip), account_key(email)
    since = now - WINDOW
    window_left = math.ceil(WINDOW.total_seconds())
    pair, _last = _failures(session, since, AuditEntry.actor == f"{client} {account}")
    if pair >= MAX_FAILURES:
        raise LockedOut(Why.account, window_left)
    ip_fails, _last = _failures(
        session, since, AuditEntry.actor.startswith(f"{client} ", autoescape=True)
    )
    if ip_fails >= CLIENT_MAX_FAILURES:
        raise LockedOut(Why.client, window_left)
    fails, last = _failures(
        session, since, AuditEntry.actor.endswith(f" {account}", autoescape=True)
    )
    if fails >= ACCOUNT_FREE_FAILURES and last is not None:
        delay = min(timedelta(seconds=2 ** (fails - ACCOUNT_FREE_FAILURES)), MAX_DELAY)
        wait = (_aware(last, now) + delay - now).total_seconds()
        if wait > 0:
            raise LockedOut(Why.slowed, math.ceil(wait))


def record_failure(session: Session, ip: str, email: str, now: datetime) -> None:
    client, account = client_key(ip), account_key(email)
    session.add(
        AuditEntry(
            at=now,
            actor=f"{client} {account}",
            action=ACTION,
            detail={"email": email[:320], "ip": client},
        )
    )
    session.flush()


def _aware(at: datetime, like: datetime) -> datetime:
    """``at`` comparable with ``like`` (a database may hand back a naive UTC time)."""
    if at.tzinfo is None and like.tzinfo is not None:
        return at.replace(tzinfo=like.tzinfo)
    return at
