"""``mtaplugin import mailman3`` against a real GNU Mailman 3.3.10 REST server.

Mailman runs from the throw-away virtualenv of :mod:`mtaplugin.testing.mailman_venv`, its
REST API served by gunicorn as Mailman serves it (:mod:`mtaplugin.testing.mailman_core`);
the test fills it through the REST API with mailmanclient (two domains, three lists,
owners, moderators, members with their own preferences, a user with a password and two
addresses, bans, header matches, template URIs, a pending request), imports, and compares
setting by setting.  A proxy in front of
Mailman answers 500, or nothing, for one list: that list is not half-imported, and a
rerun completes the import.
"""

from __future__ import annotations

import http.server
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from passlib.hash import django_pbkdf2_sha256
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import passwords
from mtaplugin.api.resources.config import ATTRIBUTES
from mtaplugin.cli import main
from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.enums import Action, DeliveryMode, MemberRole, SubscriptionMode, TemplateScope
from mtaplugin.importers import mm3values
from mtaplugin.manage import bans, domains, header_matches, lists, members, subscriptions, users
from mtaplugin.manage import held as manage_held
from mtaplugin.model import Address, Member, Template, User
from mtaplugin.testing.mailman_core import HOLD, MailmanCore
from tests.helpers import unique
from tests.unit.test_import_django_web import web_db

PASSWORD = "s3cret-pass-of-ann"
LISTS = ("announce@example.com", "dev@example.com", "team@example.org")
#: members of team@example.org (MTAPLUGIN_MM3_MEMBERS=1000 for the acceptance size)
TEAM = int(os.environ.get("MTAPLUGIN_MM3_MEMBERS", "25"))

#: settings whose values may differ after the import, and why (docs/import.md)
DOCUMENTED: dict[str, str] = {}


@pytest.fixture(scope="module")
def mailman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a fresh Mailman 3.3.10 REST API, filled by :func:`seed`."""
    core = MailmanCore(tmp_path_factory.mktemp("mailman3")).start()
    try:
        seed(core.url)
        _CORES[core.url] = core
        hold(core.url)
        yield core.url
    finally:
        core.stop()


#: each Mailman started here, by its REST URL
_CORES: dict[str, MailmanCore] = {}


def hold(url: str, name: str = "dev@example.com", message_id: str = "<held-1@example.net>") -> None:
    """A post from stranger@example.net held in the Mailman at ``url``, by Mailman's own
    code (as its incoming runner would hold it)."""
    _CORES[url].script(HOLD, name, message_id)


def client(url: str) -> Any:
    from mailmanclient import Client

    return Client(url, "restadmin", "restpass")


def seed(url: str) -> None:
    """Two domains, three lists and their people, the Mailman way (REST)."""
    mm = client(url)
    com = mm.create_domain("example.com", description="Example Lists", owner="boss@example.com")
    org = mm.create_domain("example.org", alias_domain="lists.example.org")
    dev = com.create_list("dev")
    announce = com.create_list("announce")
    team = org.create_list("team")

    s = dev.settings
    s["display_name"] = "Developers"
    s["subject_prefix"] = "[dev] "
    s["max_message_size"] = 123
    s["default_member_action"] = "hold"
    s["reply_goes_to_list"] = "point_to_list"
    s["accept_these_nonmembers"] = ["^.*@partner\\.example$", "friend@example.net"]
    s["archive_policy"] = "private"
    s["bounce_info_stale_after"] = "14d"
    s["bounce_you_are_disabled_warnings_interval"] = "1d12h"
    s["description"] = "Where the code is talked about"
    s["digest_volume_frequency"] = "weekly"
    s["send_welcome_message"] = False
    s.save()
    a = announce.settings
    a["subscription_policy"] = "confirm"
    a["default_nonmember_action"] = "discard"
    a["preferred_language"] = "de"
    a.save()

    ann = mm.create_user("ann@example.net", PASSWORD, "Ann Person")
    for address in ann.addresses:
        address.verify()
    work = ann.add_address("ann@work.example", absorb_existing=True)
    work.verify()
    ann.preferred_address = "ann@example.net"
    ann.preferences["receive_own_postings"] = False
    ann.preferences.save()

    member = dev.subscribe(
        "ann@example.net", "Ann Person", pre_verified=True, pre_confirmed=True, pre_approved=True
    )
    member.preferences["delivery_mode"] = "mime_digests"
    member.preferences["acknowledge_posts"] = True
    member.preferences.save()
    bob = dev.subscribe(
        "bob@example.net", "Bob", pre_verified=True, pre_confirmed=True, pre_approved=True
    )
    bob.moderation_action = "accept"
    bob.save()
    dev.add_owner("owner@example.com")
    # a nonmember: an address of no user, not verified (Mailman records every such poster)
    dev.add_role("nonmember", "poster@example.org")
    poster = dev.get_nonmember("poster@example.org")
    poster.moderation_action = "accept"
    poster.save()
    dev.add_moderator("mod@example.com")
    dev.bans.add("spammer@bad.example")
    dev.bans.add("^.*@evil\\.example$")
    dev.header_matches.add("X-Spam-Flag", "yes", "discard")
    dev.header_matches.add("Subject", "viagra")
    dev.set_template("list:member:regular:footer", "https://templates.example/footer.txt")
    announce.add_owner("boss@example.com")
    announce.subscribe("pending@example.net", pre_verified=True, pre_confirmed=False)
    team.add_owner("ann@example.net")
    for i in range(TEAM):
        team.subscribe(
            f"member{i:03d}@example.org",
            f"Member {i}",
            pre_verified=True,
            pre_confirmed=True,
            pre_approved=True,
        )
    mm.bans.add("everywhere@bad.example")


# -- a proxy that breaks Mailman on purpose ---------------------------------------------------


class Proxy:
    """Forwards to Mailman, except that a path containing ``break_on`` gets ``how``:
    ``"500"`` or ``"hang"`` (no answer for 10 s)."""

    def __init__(self, upstream: str, break_on: str, how: str) -> None:
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if outer.break_on in self.path:
                    if outer.how == "hang":
                        time.sleep(10)
                        return
                    body = b'{"title": "500 Internal Server Error"}'
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                request = urllib.request.Request(
                    outer.upstream + self.path,
                    headers={"Authorization": self.headers.get("Authorization", "")},
                )
                try:
                    with urllib.request.urlopen(request, timeout=30) as answer:
                        status, body = answer.status, answer.read()
                except urllib.error.HTTPError as e:
                    status, body = e.code, e.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.upstream = upstream.split("/3.1")[0]
        self.break_on, self.how = break_on, how
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/3.1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- running the import -----------------------------------------------------------------------


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def target(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[sessionmaker[Session]]:
    """A fresh mtaplugin database (SQLite and PostgreSQL) that the CLI imports into."""
    url = db_url
    monkeypatch.delenv("MTAPLUGIN_CONFIG", raising=False)
    monkeypatch.setenv("MTAPLUGIN_DATABASE_URL", url)
    engine = make_engine(url)
    yield sessionmaker_for(engine)
    engine.dispose()


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    def _run(url: str, *more: str) -> tuple[int, str, str]:
        capsys.readouterr()
        argv = ["import", "mailman3", "--url", url, "--user", "restadmin"]
        code = main([*argv, "--password", "restpass", *more])
        out = capsys.readouterr()
        return code, out.out, out.err

    return _run


def plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def same(name: str, ours: Any, theirs: Any) -> bool:
    """Whether this side's REST value and Mailman's say the same (durations compared
    as durations: Mailman writes 1d43200.0s where this side writes 1d12h)."""
    if ours == theirs:
        return True
    try:
        parse = ATTRIBUTES.writable[name]
        return bool(parse([ours]) == parse([mm3values.mailman_duration(theirs)]))
    except Exception:
        return False


def test_a_mailman3_site_moves_in_with_one_command(
    mailman: str, target: sessionmaker[Session], run: Run
) -> None:
    mm = client(mailman)
    dry_code, dry_out, dry_err = run(mailman, "--dry-run")
    assert dry_code == 0, dry_err
    assert "dry run" in dry_out
    with target() as s:
        assert lists.all_lists(s) == []
        assert s.scalars(select(User)).all() == []

    code, out, err = run(mailman)
    assert code == 0, err
    assert "GNU Mailman 3.3.10" in out and "3 list(s)" in out
    assert "no such setting here" not in out  # every setting of Mailman 3.3.10 has a place
    # announce's pending subscription, with the token Mailman mailed to the person
    assert "carried the pending subscription of pending@example.net with its token" in out
    assert "1 held post(s) copied" in out

    with target() as s:
        # -- domains, site bans
        com, org = domains.get(s, "example.com"), domains.get(s, "example.org")
        assert com.description == "Example Lists"
        assert org.alias_domain == "lists.example.org"
        assert [a.email for u in com.owners for a in u.addresses] == ["boss@example.com"]
        assert bans.find(s, None, "everywhere@bad.example") is not None

        # -- every setting both sides have, compared with Mailman's own answer
        differences = []
        for name in LISTS:
            theirs = mm.get_list(name).settings
            ours = lists.get(s, name)
            for key, value in theirs.items():
                if key not in ATTRIBUTES.writable or key == "moderator_password":
                    continue
                if not same(key, ATTRIBUTES.read(ours, key), value) and key not in DOCUMENTED:
                    differences.append((name, key, value, ATTRIBUTES.read(ours, key)))
        assert differences == []
        dev = lists.get(s, "dev@example.com")
        assert dev.display_name == "Developers" and dev.max_message_size == 123
        assert lists.get(s, "announce@example.com").preferred_language == "de"

        # -- rosters, with the members' own preferences and moderation
        for name in LISTS:
            theirs = mm.get_list(name)
            want = {
                (m.email, m.role)
                for role in ("owner", "moderator", "member", "nonmember")
                for m in theirs.get_roster(role)
            }
            mlist = lists.get(s, name)
            have = set(
                s.execute(
                    select(Address.email, Member.role)
                    .join(Member, Member.address_id == Address.id)
                    .where(Member.mailing_list_id == mlist.id)
                ).all()
            )
            assert {(e, r.value) for e, r in have} == want, name
        ann = s.scalar(
            select(Member)
            .join(Address, Member.address_id == Address.id)
            .where(Member.mailing_list_id == dev.id, Address.email == "ann@example.net")
        )
        assert ann is not None
        assert ann.delivery_mode is DeliveryMode.mime_digests
        assert ann.acknowledge_posts is True and ann.receive_own_postings is None
        assert ann.display_name == "Ann Person"
        assert ann.user is not None and ann.user.display_name == "Ann Person"
        assert ann.subscription_mode in (SubscriptionMode.as_address, SubscriptionMode.as_user)
        bob = s.scalar(
            select(Member)
            .join(Address, Member.address_id == Address.id)
            .where(Member.mailing_list_id == dev.id, Address.email == "bob@example.net")
        )
        assert bob is not None and bob.moderation_action is Action.accept
        poster = s.scalar(
            select(Member)
            .join(Address, Member.address_id == Address.id)
            .where(Member.mailing_list_id == dev.id, Address.email == "poster@example.org")
        )
        assert poster is not None and poster.role is MemberRole.nonmember
        assert poster.moderation_action is Action.accept
        assert poster.address.verified_on is None  # as in Mailman: never verified

        # -- bans, header matches, template URIs
        assert {b.email for b in s.scalars(bans.query(dev))} == {
            "spammer@bad.example",
            "^.*@evil\\.example$",
        }
        assert [(h.header, h.pattern, h.action) for h in header_matches.all_matches(s, dev)] == [
            ("x-spam-flag", "yes", Action.discard),
            ("subject", "viagra", None),
        ]
        footer = s.scalar(
            select(Template).where(
                Template.scope == TemplateScope.list,
                Template.mailing_list_id == dev.id,
                Template.name == "list:member:regular:footer",
            )
        )
        assert footer is not None and footer.uri == "https://templates.example/footer.txt"

        (held,) = manage_held.all_held(s, dev)
        assert (held.sender, held.subject) == ("stranger@example.net", "Held for you")
        assert b"Hello, anyone?" in held.raw

        # -- the user keeps the password, the addresses and their verification
        user = s.scalar(
            select(User)
            .join(Address, Address.user_id == User.id)
            .where(Address.email == "ann@work.example")
        )
        assert user is not None
        theirs_user = mm.get_user("ann@example.net")
        assert user.user_id == str(theirs_user.user_id).replace("-", "")
        assert user.password and passwords.verify(PASSWORD, user.password)
        assert not passwords.verify("wrong", user.password)
        assert {a.email for a in user.addresses} == {"ann@example.net", "ann@work.example"}
        assert all(a.verified_on is not None for a in user.addresses)
        assert user.preferred_address is not None
        assert user.preferred_address.email == "ann@example.net"
        assert user.receive_own_postings is False
        assert user.preferred_language == theirs_user.preferences["preferred_language"]

    # -- a second run changes nothing
    code, out, err = run(mailman)
    assert code == 0, err
    assert out.count("already matches") == 3, out
    assert "users: 0 of" in out

    # -- Ann logs in to the web UI with her Mailman password (rehashed then), and a
    # later run keeps the password she now has here
    with target.begin() as s:
        user = users.authenticate(s, "192.0.2.1", "ann@work.example", PASSWORD)
        assert user is not None and user.password is not None
        assert user.password.startswith("$argon2")
        assert users.authenticate(s, "192.0.2.1", "ann@example.net", "wrong") is None
    code, out, err = run(mailman)
    assert code == 0 and "users: 0 of" in out, err
    with target() as s:
        again = users.user_by_email(s, "ann@example.net")
        assert again is not None and again.password is not None
        assert again.password.startswith("$argon2") and passwords.verify(PASSWORD, again.password)

    # -- the confirmation Mailman mailed (its token) still works here (after the reruns:
    # a member Mailman's roster does not name stops a rerun without --merge)
    (request,) = mm.get_list("announce@example.com").requests
    assert request["email"] == "pending@example.net"
    with target.begin() as s:
        announce = lists.get(s, "announce@example.com")
        status, _token = subscriptions.confirm(s, announce, str(request["token"]))
        assert status is subscriptions.Status.subscribed
        assert members.is_member(s, announce, "pending@example.net")


@pytest.mark.parametrize("how", ["500", "hang"])
def test_a_mailman_that_breaks_halfway_leaves_no_list_half_imported(
    mailman: str, target: sessionmaker[Session], run: Run, how: str
) -> None:
    proxy = Proxy(mailman, "lists/team.example.org/roster/member", how)
    try:
        code, out, err = run(proxy.url, "--timeout", "2", "--quiet")
    finally:
        proxy.close()
    assert code == 1
    assert "dev@example.com" in out  # read and written before Mailman broke
    if how == "500":
        assert "Mailman answered 500" in err and "team.example.org/roster/member" in err
    else:
        assert "no answer from Mailman" in err
    with target() as s:
        names = {m.fqdn_listname for m, _n in lists.all_lists(s)}
        # the lists read before the failure are there, whole; team is not there at all
        assert names == {"announce@example.com", "dev@example.com"}
        assert (
            s.scalars(select(Member).join(Address).where(Address.email.like("member%"))).all() == []
        )

    code, _out, err = run(mailman)
    assert code == 0, err
    with target() as s:
        team = lists.get(s, "team@example.org")
        members = s.scalars(
            select(Member).where(
                Member.mailing_list_id == team.id, Member.role == MemberRole.member
            )
        ).all()
        assert len(members) == TEAM


def test_lists_picks_lists_and_their_domains_and_an_unknown_one_is_named(
    mailman: str, target: sessionmaker[Session], run: Run
) -> None:
    code, _out, err = run(mailman, "--lists", "nosuch@example.com")
    assert code == 1 and "Mailman has no list nosuch@example.com" in err
    with target() as s:
        assert lists.all_lists(s) == [] and s.scalars(select(User)).all() == []

    code, out, err = run(mailman, "--lists", "Dev@example.com", "-q")
    assert code == 0, err
    assert "1 list(s)" in out
    with target() as s:
        assert [m.fqdn_listname for m, _n in lists.all_lists(s)] == ["dev@example.com"]
        assert [d.mail_host for d, _n in domains.all_domains(s)] == ["example.com"]


def test_move_held_takes_the_held_posts_over_and_discards_them_in_mailman(
    mailman: str, target: sessionmaker[Session], run: Run
) -> None:
    """``--move-held``: the post held in Mailman is held here after the import, and no
    longer in Mailman (discarded over its REST API), so it cannot be released twice; a
    dry run names it and discards nothing."""
    mm = client(mailman)
    name = f"{unique('moved')}@example.com"
    mm.get_domain("example.com").create_list(name.split("@")[0])
    message_id = f"<{unique('moved')}@example.net>"
    hold(mailman, name, message_id)
    assert mm.get_list(name).get_held_count() == 1

    code, out, err = run(mailman, "--lists", name, "--move-held", "--dry-run")
    assert code == 0, err
    assert "would discard in Mailman (moved here): held post" in out
    assert mm.get_list(name).get_held_count() == 1

    code, out, err = run(mailman, "--lists", name, "--move-held")
    assert code == 0, err
    assert "(discarded in Mailman)" in out and "held post(s) copied" not in out
    assert mm.get_list(name).get_held_count() == 0
    with target() as s:
        (held,) = manage_held.all_held(s, lists.get(s, name))
        assert held.message_id == message_id and b"Hello, anyone?" in held.raw


def test_web_db_moves_the_postorius_password_with_the_core_user(
    mailman: str, target: sessionmaker[Session], run: Run, tmp_path: Path
) -> None:
    """``--web-db``: Ann's Django password (the one she types into Postorius) is the one
    she logs in with here, not the core's; a social-log-in account is named and mailed."""
    url = web_db(
        tmp_path,
        [
            (
                "ann",
                django_pbkdf2_sha256.hash("Django-pa55"),
                True,
                [("ann@example.net", True, True)],
            ),
            ("sam", "!social", False, [("sam@example.org", True, True)]),
        ],
    )
    code, out, err = run(mailman, "--lists", "dev@example.com", "--web-db", url)
    assert code == 0, err
    assert "web accounts: 2 of 2 created or updated" in out
    assert "web user sam@example.org: no password on the web" in out
    with target.begin() as s:
        ann = users.authenticate(s, "192.0.2.7", "ann@example.net", "Django-pa55")
        assert ann is not None and ann.is_server_owner
        assert ann.user_id == str(client(mailman).get_user("ann@example.net").user_id).replace(
            "-", ""
        )
        assert users.authenticate(s, "192.0.2.7", "ann@example.net", PASSWORD) is None


#: HyperKitty's tables as mailman-web's database holds them beside Django's (the columns
#: the import reads; tests/integration/test_hyperkitty_import.py reads a real HyperKitty's)
HYPERKITTY_DDL = """
CREATE TABLE hyperkitty_mailinglist (id INTEGER PRIMARY KEY, name VARCHAR(254));
CREATE TABLE hyperkitty_email (
    id INTEGER PRIMARY KEY, mailinglist_id INTEGER, message_id VARCHAR(255),
    message_id_hash VARCHAR(255), sender_id VARCHAR(255), sender_name VARCHAR(255),
    subject VARCHAR(512), content TEXT, date DATETIME, timezone SMALLINT,
    in_reply_to VARCHAR(255), parent_id INTEGER, thread_id INTEGER);
CREATE TABLE hyperkitty_attachment (
    id INTEGER PRIMARY KEY, email_id INTEGER, counter SMALLINT, name VARCHAR(255),
    content_type VARCHAR(255), encoding VARCHAR(255), size INTEGER, content BLOB);
"""


def test_archive_moves_the_hyperkitty_archive_in_the_same_command(
    mailman: str, target: sessionmaker[Session], run: Run, tmp_path: Path
) -> None:
    """``--web-db URL --archive``: the suite's web database holds HyperKitty's archive
    too, and one command moves the list with its archive (a thread of two posts)."""
    import sqlite3

    from mtaplugin.model import ArchivedMessage

    url = web_db(tmp_path, [])
    con = sqlite3.connect(str(tmp_path / "mailman3web.db"))
    con.executescript(HYPERKITTY_DDL)
    con.execute("INSERT INTO hyperkitty_mailinglist VALUES (1, 'dev@example.com')")
    for pk, mid, parent, when in (
        (1, "hk-root@example.net", None, "2025-03-04 05:06:07"),
        (2, "hk-reply@example.net", 1, "2025-03-05 05:06:07"),
    ):
        con.execute(
            "INSERT INTO hyperkitty_email VALUES (?, 1, ?, '', 'ann@example.net', 'Ann', ?,"
            " ?, ?, 60, ?, ?, 1)",
            (
                pk,
                mid,
                "Re: archived" if parent else "archived",
                f"archived post {pk}\n",
                when,
                "hk-root@example.net" if parent else None,
                parent,
            ),
        )
    con.commit()
    con.close()
    bad = run(mailman, "--lists", "dev@example.com", "--archive")
    assert bad[0] == 1 and "archive" in bad[2]
    code, _out, err = run(mailman, "--lists", "dev@example.com", "--web-db", url, "--archive")
    assert code == 0, err
    with target() as s:
        mlist = lists.get(s, "dev@example.com")
        got = {
            m.message_id: m
            for m in s.scalars(
                select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id)
            )
        }
    assert set(got) >= {"<hk-root@example.net>", "<hk-reply@example.net>"}
    assert got["<hk-reply@example.net>"].parent_id == got["<hk-root@example.net>"].id
    assert "archived post 2" in got["<hk-reply@example.net>"].text
