"""Who is asking, and what they may see.

Deny by default.  Two kinds of credential, both HTTP Basic:

* the site admin's, from the configuration (``api.admin_user`` / ``api.admin_password``),
  and any user marked ``is_server_owner``: everything;
* a user's own (a verified email address of theirs, or their user_id, and their password,
  checked against the argon2 hash): the domains they own with every list in them, and the
  lists where one of their verified addresses is an owner (administer) or a moderator
  (moderate: read, held posts, requests).  Anything else is refused with 403.

An unverified address grants nothing (it may be somebody else's, only claimed:
:mod:`mtaplugin.manage.claims`).

Guessing is limited as on the web's log-in page, and counted with it: a user's credential
goes through :mod:`mtaplugin.manage.login_limit` (in SQL, across workers and hosts) before
its password is checked, and a wrong one is counted there; a refused try answers 429 with
``Retry-After``, and no argon2 is spent on it.  The configured admin credential is limited
per worker process: :data:`ADMIN_MAX_FAILURES` wrong passwords for the admin's name from
one client within :data:`mtaplugin.manage.login_limit.WINDOW`, and that client is refused
the admin name, right password or not, until the window has passed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import threading
import time
from dataclasses import dataclass, field

import falcon
from sqlalchemy import ColumnElement, false, or_
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.api import browsers
from mtaplugin.api.dialect import forbidden
from mtaplugin.clock import Clock, system_clock
from mtaplugin.config import Settings
from mtaplugin.db import unavailable_as_trylater
from mtaplugin.enums import MemberRole
from mtaplugin.i18n import _
from mtaplugin.manage import login_limit, users
from mtaplugin.model import Domain, MailingList, User

REALM = 'Basic realm="mtaplugin-rest",charset="utf-8"'
#: wrong passwords for the configured admin's name from one client, per worker, before
#: that client is refused the name for :data:`login_limit.WINDOW`
ADMIN_MAX_FAILURES = 10
#: a successful argon2 check is remembered this long (seconds), per worker
_CACHE_TTL = 60.0


@dataclass(frozen=True)
class Principal:
    name: str
    is_admin: bool = False
    user_pk: int | None = None
    domains: frozenset[str] = field(default_factory=frozenset)
    #: list primary keys this principal administers (owner) and moderates (moderator)
    administers: frozenset[int] = field(default_factory=frozenset)
    moderates: frozenset[int] = field(default_factory=frozenset)

    # --- checks -------------------------------------------------------------------------
    def require_admin(self) -> None:
        if not self.is_admin:
            raise forbidden(_("only the site administrator may do this"))

    def can_moderate(self, mlist: MailingList) -> bool:
        return (
            self.is_admin
            or mlist.mail_host in self.domains
            or mlist.id in self.administers
            or mlist.id in self.moderates
        )

    def can_administer(self, mlist: MailingList) -> bool:
        return self.is_admin or mlist.mail_host in self.domains or mlist.id in self.administers

    def check_list(self, mlist: MailingList, administer: bool = False) -> None:
        ok = self.can_administer(mlist) if administer else self.can_moderate(mlist)
        if not ok:
            raise forbidden(
                _("{who} may not {what} {list}").format(
                    who=self.name,
                    what=_("administer") if administer else _("read"),
                    list=mlist.fqdn_listname,
                )
            )

    def check_domain(self, mail_host: str) -> None:
        if not (self.is_admin or mail_host in self.domains):
            raise forbidden(
                _("{who} may not administer the domain {host}").format(
                    who=self.name, host=mail_host
                )
            )

    def check_user(self, user: User) -> None:
        if not (self.is_admin or user.id == self.user_pk):
            raise forbidden(_("{who} may only see their own user").format(who=self.name))

    # --- SQL filters --------------------------------------------------------------------
    def lists_filter(self) -> ColumnElement[bool] | None:
        """The lists this principal may read, as a WHERE clause (None: all)."""
        if self.is_admin:
            return None
        ids = self.administers | self.moderates
        clauses: list[ColumnElement[bool]] = []
        if self.domains:
            clauses.append(MailingList.mail_host.in_(sorted(self.domains)))
        if ids:
            clauses.append(MailingList.id.in_(sorted(ids)))
        return or_(*clauses) if clauses else false()

    def domains_filter(self) -> ColumnElement[bool] | None:
        if self.is_admin:
            return None
        if not self.domains:
            return false()
        return Domain.mail_host.in_(sorted(self.domains))


def _load_user_principal(session: Session, user: User, name: str) -> Principal:
    if user.is_server_owner:
        return Principal(name=name, is_admin=True, user_pk=user.id)
    roles = users.list_roles(session, user, (MemberRole.owner, MemberRole.moderator))
    return Principal(
        name=name,
        user_pk=user.id,
        domains=users.owned_domains(session, user),
        administers=roles[MemberRole.owner],
        moderates=roles[MemberRole.moderator],
    )


def _user_named(session: Session, name: str) -> User | None:
    """The user of the credential's name: a user_id, or one of the user's verified
    addresses (an unverified one logs nobody in)."""
    if "@" in name:
        return users.user_by_email(session, name, verified=True)
    return users.user_by_id(session, name.strip().lower())


class Authenticate:
    """Falcon middleware: sets ``req.context.principal`` or answers 401."""

    def __init__(
        self, settings: Settings, factory: sessionmaker[Session], clock: Clock = system_clock
    ) -> None:
        self.user = settings.api.admin_user.encode()
        self.password = settings.api.admin_password.encode()
        self.factory = factory
        self.clock = clock
        self._ok: dict[tuple[str, bytes], tuple[float, str]] = {}
        #: wrong admin passwords per client: their times (monotonic seconds)
        self._admin_failures: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def _refuse(self, req: falcon.Request) -> falcon.HTTPUnauthorized:
        # no challenge to a browser: no password prompt, no cached credentials (which it
        # would send along with another site's forms)
        return falcon.HTTPUnauthorized(
            title="401 Unauthorized",
            description=_("REST API authorization failed"),
            challenges=None if browsers.is_browser(req) else [REALM],
        )

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Before routing: an unknown path without credentials is a 401 too."""
        name, password = self._credentials(req)
        client = login_limit.client_key(req.remote_addr or "")
        if hmac.compare_digest(name.encode(), self.user):
            self._admin(req, client, password)
            req.context.principal = Principal(name=name, is_admin=True)
            return
        with unavailable_as_trylater(), self.factory() as session:
            user = _user_named(session, name)
            if user is None or not self._cached(user, name, password):
                now = self.clock()
                try:
                    login_limit.check(session, client, name, now)
                except login_limit.LockedOut as exc:
                    raise _too_many(exc.retry_after) from None
                if user is None or not self._check(user, name, password):
                    login_limit.record_failure(session, client, name, now)
                    session.commit()
                    raise self._refuse(req)
            req.context.principal = _load_user_principal(session, user, name)

    def _admin(self, req: falcon.Request, client: str, password: str) -> None:
        """Let the configured admin's credential through, or refuse it (401, or 429 for a
        client that guessed too often)."""
        now = time.monotonic()
        window = login_limit.WINDOW.total_seconds()
        with self._lock:
            recent = [t for t in self._admin_failures.get(client, ()) if t > now - window]
            if len(recent) >= ADMIN_MAX_FAILURES:
                self._admin_failures[client] = recent
                raise _too_many(max(1, int(recent[0] + window - now) + 1))
        if hmac.compare_digest(password.encode(), self.password):
            return
        with self._lock:
            if len(self._admin_failures) > 10_000:
                self._admin_failures.clear()
            self._admin_failures[client] = [*recent, now]
        raise self._refuse(req)

    def _credentials(self, req: falcon.Request) -> tuple[str, str]:
        header = req.get_header("Authorization") or ""
        scheme, _sp, token = header.partition(" ")
        if scheme.lower() != "basic":
            raise self._refuse(req)
        try:
            decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise self._refuse(req) from None
        name, colon, password = decoded.partition(":")
        if not colon or not name:
            raise self._refuse(req)
        return name, password

    def _cached(self, user: User, name: str, password: str) -> bool:
        """Whether this credential was checked right within :data:`_CACHE_TTL`."""
        with self._lock:
            hit = self._ok.get(_memo_key(name, password))
        return hit is not None and hit[0] > time.monotonic() and hit[1] == (user.password or "")

    def _check(self, user: User, name: str, password: str) -> bool:
        """The argon2 check; a right credential is remembered for :data:`_CACHE_TTL`."""
        now = time.monotonic()
        if not users.check_password(user, password):
            return False
        with self._lock:
            if len(self._ok) > 1000:
                self._ok.clear()
            self._ok[_memo_key(name, password)] = (now + _CACHE_TTL, user.password or "")
        return True


def _memo_key(name: str, password: str) -> tuple[str, bytes]:
    """How a checked credential is remembered (never the password itself)."""
    return name, hashlib.sha256(password.encode()).digest()


def _too_many(retry_after: int) -> falcon.HTTPTooManyRequests:
    return falcon.HTTPTooManyRequests(
        title="429 Too Many Requests",
        description=_("too many failed log-ins; try again in {seconds} seconds").format(
            seconds=retry_after
        ),
        retry_after=retry_after,
    )
