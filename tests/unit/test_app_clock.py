"""One clock: the web's session cookie and the writes the web and REST make through
``manage/`` (the addresses they verify, the audit log's entries) read the clock the app
was given, not the machine's.  The clock here runs years ahead of the wall clock, so a
read of the wall clock anywhere on these paths shows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email import message_from_bytes

import pytest
from falcon.testing import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.api.app import create_app
from mtaplugin.clock import ManualClock
from mtaplugin.config import DatabaseSettings, Settings
from mtaplugin.db import sessionmaker_for
from mtaplugin.engine import ListEngine
from mtaplugin.enums import MemberRole
from mtaplugin.manage import domains, lists, users
from mtaplugin.model import (
    Address,
    AuditEntry,
    Ban,
    HeldMessage,
    Member,
    OutboxMessage,
    PendingRequest,
)
from mtaplugin.posting.verdict import Discard
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.web import cookies
from mtaplugin.web.app import create_web_app
from tests.helpers import make_post, send_hold_notices
from tests.unit.test_api import ADMIN, Api
from tests.unit.test_one_line_settings import IDENTITY
from tests.unit.test_web_templates import WELCOME
from tests.unit.webclient import PASSWORD, Client, Site, web_settings

#: far from any machine's time, so that the wall clock cannot pass for it
AHEAD = datetime(2041, 3, 7, 9, 30, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(AHEAD)


@pytest.fixture
def site(web_site: Site, clock: ManualClock, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """The web site, its app on ``clock``."""
    var_dir = tmp_path_factory.mktemp("clock") / "var"
    web_site.app = create_web_app(web_settings(var_dir), web_site.sessions, clock)
    return web_site


@pytest.fixture
def owner(site: Site) -> Client:
    """The list's owner, logged in to the web."""
    return site.owner()


def test_a_web_session_ends_max_age_after_the_log_in_by_the_apps_clock(
    site: Site, clock: ManualClock
) -> None:
    client = site.client()
    assert client.login(f"owner@{site.host}").status_code == 303
    settings = f"/lists/{site.list_id}/settings"
    clock.advance(seconds=cookies.MAX_AGE - 60)
    assert client.get(settings).status_code == 200
    clock.advance(seconds=120)
    expired = client.get(settings)
    assert expired.status_code == 303 and "/login" in expired.headers["location"]


def test_a_log_out_ends_the_session_on_a_clock_ahead_of_the_machine(site: Site) -> None:
    """The log-out is dated by the clock that dates the cookie: a copy of the cookie is
    worth nothing after it, whatever the machine's time."""
    client = site.client()
    client.login(f"owner@{site.host}")
    stolen = site.client()
    stolen.cookie = client.cookie
    client.post("/logout", {})
    page = stolen.get(f"/lists/{site.list_id}/settings")
    assert page.status_code == 303 and "/login" in page.headers["location"]


def _verified_on(sessions: sessionmaker[Session], email: str) -> datetime | None:
    with sessions() as s:
        return s.scalar(select(Address.verified_on).where(Address.email == email))


def test_an_address_the_web_admin_adds_is_verified_and_audited_at_the_apps_clock(
    site: Site, clock: ManualClock, owner: Client
) -> None:
    clock.advance(hours=1)
    for role, email in (("moderator", "mod2@example.org"), ("member", "new@example.org")):
        added = owner.post(
            f"/lists/{site.list_id}/members", {"op": "add", "role": role, "email": email}
        )
        assert added.status_code == 200, (role, added.text)
        assert _verified_on(site.sessions, email) == clock(), role
    with site.sessions() as s:
        dates = s.scalars(
            select(AuditEntry.at).where(
                AuditEntry.action == "member.add", AuditEntry.actor == f"web:owner@{site.host}"
            )
        ).all()
    assert dates and set(dates) == {clock()}


def test_a_moderator_rest_adds_is_verified_at_the_apps_clock(
    site: Site, clock: ManualClock, module_db_url: str, module_engine: Engine
) -> None:
    settings = Settings(database=DatabaseSettings(url=module_db_url))
    api = Api(TestClient(create_app(settings, sessionmaker_for(module_engine), clock)))
    clock.advance(timedelta(days=2))
    body = f"list_id={site.list_id}&subscriber=rest-mod@example.org&role=moderator"
    assert api.post("members", body).status_code == 201
    assert _verified_on(site.sessions, "rest-mod@example.org") == clock()


# --- the audit log: every entry the web and REST write is dated by the app's clock -------


def _dated(sessions: sessionmaker[Session], action: str, actor: str) -> set[datetime]:
    """When the audit log says ``actor`` did ``action``."""
    with sessions() as s:
        return set(
            s.scalars(
                select(AuditEntry.at).where(AuditEntry.action == action, AuditEntry.actor == actor)
            )
        )


def _hold(site: Site) -> int:
    with site.sessions.begin() as s:
        row = HeldMessage(
            mailing_list_id=lists.get(s, site.address).id,
            sender="stranger@example.net",
            subject="please hold",
            reasons=[["nonmember-moderation", "The sender is not a member"]],
            raw=make_post("stranger@example.net", site.address),
        )
        s.add(row)
        s.flush()
        return row.id


def test_a_settings_change_on_the_web_is_audited_at_the_apps_clock(
    site: Site, clock: ManualClock, owner: Client
) -> None:
    clock.advance(minutes=5)
    saved = owner.post(f"/lists/{site.list_id}/settings/list-identity", IDENTITY)
    assert saved.status_code == 200 and "Saved" in saved.text
    assert _dated(site.sessions, "list.settings", f"web:owner@{site.host}") == {clock()}


def test_a_domains_lists_and_a_template_are_audited_at_the_apps_clock(
    site: Site, clock: ManualClock
) -> None:
    boss = f"boss@{site.host}"
    with site.sessions.begin() as s:
        user = users.add_user(s, boss, PASSWORD)
        domain = domains.get(s, site.host)
        domain.owners.append(user)
    client = site.client()
    client.login(boss)
    clock.advance(hours=2)
    news = {"list_id": f"news.{site.host}", "confirm_name": f"news@{site.host}"}
    made = client.post(f"/domains/{site.host}", {"op": "create", "list_name": "news"})
    assert made.status_code == 200, made.text
    assert client.post(f"/domains/{site.host}", {"op": "remove", **news}).status_code == 200
    saved = client.post(f"/lists/{site.list_id}/templates/{WELCOME}", {"op": "save", "text": "Hi"})
    assert saved.status_code in (200, 303), saved.text
    for action in ("list.create", "list.remove", "template.save"):
        assert _dated(site.sessions, action, f"web:{boss}") == {clock()}, action


def test_a_password_reset_and_change_are_audited_at_the_apps_clock(
    site: Site, clock: ManualClock
) -> None:
    mod = f"mod@{site.host}"
    client = site.client()
    client.post("/reset", {"email": mod})
    with site.sessions() as s:
        token = s.scalar(select(PendingRequest.token).where(PendingRequest.email == mod))
        queued = [
            r.next_attempt_at for r in s.scalars(select(OutboxMessage)) if mod in r.recipients
        ]
    assert queued == [clock()]  # the mail with the link: due at the app's clock
    clock.advance(minutes=10)
    new = {"password": "new password 1", "password_again": "new password 1"}
    assert client.post(f"/reset/{token}", new).status_code == 200
    assert _dated(site.sessions, "web.password_reset", mod) == {clock()}
    client.login(mod, "new password 1")
    clock.advance(minutes=10)
    changed = client.post(
        "/account",
        {"action": "password", "current_password": "new password 1", **new},
    )
    assert changed.status_code in (200, 303), changed.text
    with site.sessions() as s:
        user = users.user_by_email(s, mod)
        assert user is not None
        actor = f"user:{user.user_id}"
    assert _dated(site.sessions, "account.password", actor) == {clock()}


def test_held_post_decisions_on_the_web_and_rest_are_audited_at_the_apps_clock(
    site: Site, clock: ManualClock, module_db_url: str, module_engine: Engine
) -> None:
    kept, dropped, refused = _hold(site), _hold(site), _hold(site)
    mod = site.client()
    mod.login(f"mod@{site.host}")
    clock.advance(hours=1)
    queue = f"/lists/{site.list_id}/held"
    assert mod.post(queue, {"action": "defer", "request_id": kept}).status_code == 200
    assert mod.post(queue, {"action": "discard", "request_id": dropped}).status_code == 200
    for action in ("held.defer", "held.discard"):
        assert _dated(site.sessions, action, f"web:mod@{site.host}") == {clock()}, action
    settings = Settings(database=DatabaseSettings(url=module_db_url))
    api = Api(TestClient(create_app(settings, sessionmaker_for(module_engine), clock)))
    clock.advance(days=1)
    body = "action=reject&reason=no&forward=mod2@example.org"
    assert api.post(f"lists/{site.list_id}/held/{refused}", body).status_code == 204
    for action in ("held.forward", "held.reject"):
        assert _dated(site.sessions, action, ADMIN[0]) == {clock()}, action
    forwarded = [r for r in site.outbox() if r.recipients == ["mod2@example.org"]]
    assert [r.next_attempt_at for r in forwarded] == [clock()]


def test_a_ban_across_lists_on_the_web_is_audited_at_the_apps_clock(
    site: Site, clock: ManualClock, owner: Client
) -> None:
    clock.advance(minutes=30)
    banned = owner.post(
        "/people", [("email", "anne@example.com"), ("action", "ban"), ("lists", site.list_id)]
    )
    assert banned.status_code == 200, banned.text
    assert _dated(site.sessions, "ban.add", f"web:owner@{site.host}") == {clock()}


def test_rows_the_rest_api_creates_are_dated_by_the_apps_clock(
    site: Site, clock: ManualClock, module_db_url: str, module_engine: Engine
) -> None:
    """A domain, a list, a ban, a user with an address, a moderator: created at the clock
    the app was given (the column's default would be the machine's time)."""
    settings = Settings(database=DatabaseSettings(url=module_db_url))
    api = Api(TestClient(create_app(settings, sessionmaker_for(module_engine), clock)))
    clock.advance(days=30)
    host = f"rows.{site.host}"
    assert api.post("domains", f"mail_host={host}").status_code == 201
    assert api.post("lists", f"fqdn_listname=rows@{host}").status_code == 201
    assert api.post(f"lists/rows.{host}/bans", "email=spam@example.net").status_code == 201
    assert api.post("users", f"email=carol@{host}&password=a+long+password").status_code == 201
    mod = f"list_id=rows.{host}&subscriber=dave@{host}&role=moderator"
    assert api.post("members", mod).status_code == 201
    with site.sessions() as s:
        mlist = lists.get(s, f"rows@{host}")
        carol = users.user_by_email(s, f"carol@{host}")
        assert carol is not None
        dates = {
            "domain": domains.get(s, host).created_at,
            "list": mlist.created_at,
            "ban": s.scalar(select(Ban.created_at).where(Ban.mailing_list_id == mlist.id)),
            "user": carol.created_on,
            "address": s.scalar(
                select(Address.registered_on).where(Address.email == f"carol@{host}")
            ),
            "moderator": s.scalar(
                select(Member.created_at).where(Member.mailing_list_id == mlist.id)
            ),
        }
    assert dates == dict.fromkeys(dates, clock())


def test_a_mass_subscription_batch_spans_a_day_of_the_apps_clock(
    site: Site, clock: ManualClock
) -> None:
    """The chunks of one batch (mass.js) count for its owners' notice for a day: a day of
    the clock that dates their audit entries, whatever the machine's time."""
    site.update(admin_notify_mchanges=True, send_welcome_message=False)
    owner = site.client()
    url = f"/lists/{site.list_id}/mass"
    batch = "0f8e2c1a-5b7d-4e3f-9a1b-2c3d4e5f6a7c"
    for n, last in ((1, {}), (2, {"last": "1"})):
        owner.login(f"owner@{site.host}")  # (a new log-in: the clock passes a cookie's life)
        chunk = {"op": "subscribe", "addresses": f"c{n}@chunks.example", "batch": batch}
        assert owner.post(url, chunk | last).status_code == 200
        clock.advance(days=2)
    [notice] = [
        message_from_bytes(row.raw)
        for row in site.outbox()
        if f"owner@{site.host}" in row.recipients
    ]
    assert "c2@chunks.example joined" in notice["Subject"]
    assert b"c1@chunks.example" not in notice.as_bytes()


def test_the_engines_hold_is_dated_by_its_clock(site: Site, clock: ManualClock) -> None:
    """A nonmember's post held by the engine: the held post, the poster's nonmember row and
    the moderators' notice carry the engine's clock (the hold's age decides its expiry),
    and so does the release a moderator then makes on the web."""
    engine = ListEngine(site.sessions, clock=clock)
    sender = "newcomer@example.net"
    env = Envelope(mail_from=sender, recipients=[f"<{site.address}>"])
    verdict = engine.decide(env, make_post(sender, site.address, subject="hold me"))
    assert isinstance(verdict, Discard)
    (held_id,) = verdict.stored.held.values()
    with site.sessions() as s:
        held = s.get(HeldMessage, held_id)
        assert held is not None and held.hold_date == clock()
        assert (
            s.scalar(
                select(Member.created_at)
                .join(Address, Address.id == Member.address_id)
                .where(Address.email == sender, Member.role == MemberRole.nonmember)
            )
            == clock()
        )
    # The worker makes the moderators' notice after the answer, on the site's clock too.
    assert send_hold_notices(site.sessions, clock=clock) == 1
    notices = [r for r in site.outbox() if f"mod@{site.host}" in r.recipients]
    assert notices and {r.next_attempt_at for r in notices} == {clock()}
    mod = site.client()
    mod.login(f"mod@{site.host}")
    clock.advance(minutes=20)
    queue = f"/lists/{site.list_id}/held"
    assert mod.post(queue, {"action": "approve", "request_id": held_id}).status_code == 200
    released = [r for r in site.outbox() if r.kind == "release"]
    assert [r.next_attempt_at for r in released] == [clock()]
