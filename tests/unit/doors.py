"""The site of the access matrix (tests/unit/test_access_matrix.py): two list domains, three
lists, one user per role, secrets seeded where they live, and the routes of both Falcon apps
read from their routers.

Every request runs inside a SAVEPOINT that is rolled back afterwards, so an allowed DELETE
or POST does not change what the next request finds."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import falcon
from falcon import testing
from sqlalchemy import Connection, Engine, event
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config
from mtaplugin.api.app import create_app
from mtaplugin.clock import system_clock
from mtaplugin.db import make_engine
from mtaplugin.enums import ArchivePolicy, MemberRole, RequestType, TokenOwner
from mtaplugin.manage import domains, lists, members, users
from mtaplugin.model import Ban, HeaderMatch, HeldMessage, Member, PendingRequest
from mtaplugin.web import cookies, keys
from mtaplugin.web.app import create_web_app

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
ROLES = ("anonymous", "member", "moderator", "owner", "domain_owner", "site_admin")
TARGETS = ("own_list", "other_list", "other_domain")

PASSWORD = "matrix password 1"
API_ADMIN = ("restadmin", "rest-admin-password-SEEKRIT-7a1b")
SECRET_KEY = "site-secret-key-SEEKRIT-0123456789abcdef"
#: the seeded values no answer or log line may show
MODERATOR_PASSWORD_HASH = "$6$rounds=5000$SEEKRITsalt$abcdefghijklmnopqrstuv"
LEGACY_HASHES = ("$2b$12$SEEKRITbcryptsaltsaltsuHASHHASHHASHHASHHASHHASHHASHH", "$5$SEEKRIT$abc")
TEMPLATE_URI_PASSWORD = "uri-password-SEEKRIT-42"

HOST_A = "a.example"
HOST_B = "b.example"
#: who is who: role -> login address
LOGIN = {
    "member": "member@people.example",
    "moderator": f"mod@{HOST_A}",
    "owner": f"owner@{HOST_A}",
    "domain_owner": f"domowner@{HOST_B}",
    "site_admin": "admin@site.example",
}
#: the lists of the targets, and a plain member of each (the person routes' target)
LIST = {
    "own_list": f"own@{HOST_A}",
    "other_list": f"other@{HOST_A}",
    "other_domain": f"far@{HOST_B}",
}
SUBSCRIBER = {
    "own_list": LOGIN["member"],
    "other_list": "sub2@people.example",
    "other_domain": "sub3@people.example",
}


def list_id(target: str) -> str:
    return LIST[target].replace("@", ".")


def host(target: str) -> str:
    return LIST[target].split("@")[1]


@dataclass
class Seeded:
    member_ids: dict[str, str] = field(default_factory=dict)
    user_ids: dict[str, str] = field(default_factory=dict)
    held_ids: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    #: every secret value in the database (password hashes, tokens)
    secrets: set[str] = field(default_factory=set)


def _savepoints_on_sqlite(engine: Engine) -> None:
    """pysqlite's own transaction handling gets in the way of SAVEPOINT: SQLAlchemy's recipe."""
    if engine.dialect.name != "sqlite":
        return

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _rec: Any) -> None:
        dbapi_conn.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN")


def seed(s: Session) -> Seeded:
    out = Seeded()
    domains.create(s, HOST_A)
    dom_b = domains.create(s, HOST_B)
    for target, address in LIST.items():
        mlist = lists.create(s, address)
        mlist.moderator_password = MODERATOR_PASSWORD_HASH
        m = members.add(s, mlist, SUBSCRIBER[target], MemberRole.member)
        s.flush()
        out.member_ids[target] = m.member_id
        s.add(Ban(email=f"banned@{target.replace('_', '-')}.example", mailing_list_id=mlist.id))
        s.add(HeaderMatch(mailing_list_id=mlist.id, position=0, header="x-spam", pattern="yes"))
        held = HeldMessage(
            mailing_list_id=mlist.id,
            sender="stranger@example.net",
            subject="held",
            reasons=[["nonmember-moderation", "not a member"]],
            raw=b"From: stranger@example.net\r\nSubject: held\r\n\r\nbody\r\n",
        )
        s.add(held)
        s.flush()
        out.held_ids[target] = held.id
        token = f"pendingtoken{target.replace('_', '')}SEEKRIT"
        s.add(
            PendingRequest(
                token=token,
                request_type=RequestType.subscription,
                token_owner=TokenOwner.moderator,
                mailing_list_id=mlist.id,
                email=f"joiner@{target.replace('_', '-')}.example",
                expires_at=system_clock() + timedelta(days=3),
            )
        )
        out.tokens[target] = token
        out.secrets.add(token)
    # the other list of domain A is not advertised: who has no role on it may not see it
    lists.get(s, LIST["other_list"]).advertised = False
    # archives: the own list's and the other domain's private, the hidden list's public
    for target, policy in (
        ("own_list", "private"),
        ("other_list", "public"),
        ("other_domain", "private"),
    ):
        lists.get(s, LIST[target]).archive_policy = ArchivePolicy[policy]
    own = lists.get(s, LIST["own_list"])
    members.add(s, own, LOGIN["moderator"], MemberRole.moderator)
    members.add(s, own, LOGIN["owner"], MemberRole.owner)
    for role, email in LOGIN.items():
        u = users.add_user(s, email, PASSWORD, site_admin=role == "site_admin")
        out.user_ids[role] = u.user_id
        assert u.password
        out.secrets.add(u.password)
    for target in ("other_list", "other_domain"):
        u = users.add_user(s, SUBSCRIBER[target], PASSWORD)
        out.user_ids[target] = u.user_id
        assert u.password
        out.secrets.add(u.password)
    domains.add_owner(s, dom_b, LOGIN["domain_owner"], by_site_admin=True)
    # users whose hashes are of older schemes (still accepted, re-hashed at log-in)
    for n, legacy in enumerate(LEGACY_HASHES):
        u = users.create(s, f"legacy{n}@people.example")
        u.password = legacy
    s.flush()
    out.secrets.update(LEGACY_HASHES)
    out.secrets.update((MODERATOR_PASSWORD_HASH, API_ADMIN[1], SECRET_KEY))
    return out


@dataclass
class Doors:
    """Both apps on one connection, with the per-role credentials."""

    conn: Connection
    api: falcon.App[falcon.Request, falcon.Response]
    web: falcon.App[falcon.Request, falcon.Response]
    seeded: Seeded
    session_key: bytes
    web_cookies: dict[str, str] = field(default_factory=dict)
    csrf: str = "csrf-token-of-the-matrix"

    def request(
        self,
        app: str,
        role: str,
        method: str,
        path: str,
        csrf: bool = True,
        token: str | None = None,
        form: str = "",
        keep: bool = False,
    ) -> testing.Result:
        headers: dict[str, str] = {}
        body = None
        cookie = None
        if app == "api":
            if role != "anonymous":
                who = (LOGIN[role], PASSWORD)
                headers["Authorization"] = (
                    "Basic " + base64.b64encode(":".join(who).encode()).decode()
                )
            if method in ("POST", "PUT", "PATCH"):
                headers["Content-Type"] = "application/x-www-form-urlencoded"
                body = form
            target = self.api
        else:
            cookie = {cookies.COOKIE: self.web_cookies[role]}
            if method == "POST":
                headers["Content-Type"] = "application/x-www-form-urlencoded"
                sent = self.csrf if csrf else token
                body = "&".join(p for p in (f"csrf_token={sent}" if sent else "", form) if p)
            target = self.web
        point = self.conn.begin_nested()
        try:
            return testing.simulate_request(
                target, method, path, headers=headers, body=body, cookies=cookie
            )
        finally:
            if keep:
                point.commit()
            else:
                point.rollback()


def make_doors(url: str, var_dir: Path) -> Iterator[Doors]:
    engine = make_engine(url, timeout=2.0)
    _savepoints_on_sqlite(engine)
    conn = engine.connect()
    outer = conn.begin()
    factory = sessionmaker(
        bind=conn, expire_on_commit=False, join_transaction_mode="create_savepoint"
    )
    with factory() as s:
        seeded = seed(s)
        s.commit()
    settings = config.load(
        environ={
            "MTAPLUGIN_DATABASE_URL": url,
            "MTAPLUGIN_SITE_SECRET_KEY": SECRET_KEY,
            "MTAPLUGIN_SITE_VAR_DIR": str(var_dir),
            "MTAPLUGIN_API_ADMIN_USER": API_ADMIN[0],
            "MTAPLUGIN_API_ADMIN_PASSWORD": API_ADMIN[1],
            "MTAPLUGIN_WEB_BASE_URL": "https://lists.example",
        }
    )
    doors = Doors(
        conn=conn,
        api=create_app(settings, factory),
        web=create_web_app(settings, factory),
        seeded=seeded,
        session_key=keys.derive(keys.site_secret(settings), "session"),
    )
    with factory() as s:
        for role in ROLES:
            user = users.user_by_email(s, LOGIN[role]) if role != "anonymous" else None
            ws = cookies.WebSession(
                csrf=doors.csrf,
                user_id=user.user_id if user else None,
                pw=cookies.password_fingerprint(user.password) if user else "",
                issued=int(time.time()),
            )
            doors.web_cookies[role] = cookies.dump(doors.session_key, ws)
    try:
        yield doors
    finally:
        outer.rollback()
        conn.close()
        engine.dispose()


# --- the routes, from the routers themselves -----------------------------------------


def routes_of(app: falcon.App[falcon.Request, falcon.Response]) -> list[tuple[str, str]]:
    """Every (URI template, method) that has a responder in ``app``."""
    found: list[tuple[str, str]] = []

    def walk(nodes: list[Any]) -> None:
        for node in nodes:
            if node.resource is not None:
                for method in METHODS:
                    if callable(getattr(node.resource, "on_" + method.lower(), None)):
                        found.append((node.uri_template, method))
            walk(node.children)

    walk(app._router._roots)
    return found


def member_of(s: Session, target: str) -> Member:
    mlist = lists.get(s, LIST[target])
    return next(m for m in mlist.members if m.role == MemberRole.member)
