"""The ``mtaplugin`` command, run in-process through ``main(argv)`` and as a real process."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.cli import main
from mtaplugin.db import alembic_config, make_engine
from mtaplugin.manage import lists, members
from mtaplugin.model import Address, Domain, MailingList, Member
from mtaplugin.model.enums import MemberRole
from tests.helpers import run_mtaplugin
from tests.unit.dbutil import counts

ALL = (Domain, MailingList, Member, Address)


run_process = run_mtaplugin  # (a process of its own, as a mail admin runs it)


def table(db: sessionmaker[Session]) -> dict[str, int]:
    with db() as s:
        return counts(s, *ALL)


def roster(db: sessionmaker[Session], name: str) -> list[tuple[str, str, str]]:
    with db() as s:
        mlist = lists.get(s, name)
        return [(a.email, m.role.value, m.display_name) for m, a in members.roster(s, mlist)]


@pytest.fixture
def team(run, db) -> str:
    assert run("domains", "add", "lists.test").code == 0
    assert run("lists", "create", "team@lists.test").code == 0
    return "team@lists.test"


# --- db -----------------------------------------------------------------------------------
def test_db_upgrade_and_current_on_a_new_file(tmp_path: Path):
    path = tmp_path / "sub" / "new.db"
    env = {"MTAPLUGIN_DATABASE_URL": f"sqlite:///{path}"}
    empty = run_process("db", "current", env=env)
    assert empty.returncode == 0
    assert "(empty database)" in empty.stdout
    up = run_process("db", "upgrade", env=env)
    assert up.returncode == 0, up.stderr
    assert "newest revision" in up.stdout
    assert str(path) in up.stdout
    head = ScriptDirectory.from_config(alembic_config(f"sqlite:///{path}")).get_current_head()
    current = run_process("db", "current", env=env)
    assert current.stdout.strip() == head
    engine = make_engine(f"sqlite:///{path}")
    tables = set(inspect(engine).get_table_names())
    engine.dispose()
    assert {"domains", "mailing_lists", "members", "addresses", "outbox"} <= tables
    # Upgrading an up-to-date database is harmless.
    assert run_process("db", "upgrade", env=env).returncode == 0


def test_bad_configuration_is_an_error_naming_the_key(tmp_path: Path):
    proc = run_process(
        "domains",
        "list",
        env={"MTAPLUGIN_DATABASE_URL": "mysql://nope", "MTAPLUGIN_API_WORKERS": "2"},
    )
    assert proc.returncode == 1
    assert "database.url" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- domains ------------------------------------------------------------------------------
def test_domains_add_list_remove(run, db):
    r = run("domains", "add", "Lists.Test", "--description", "Our lists")
    assert (r.code, r.out.strip()) == (0, "created domain lists.test")
    assert run("domains", "add", "other.test").code == 0
    assert run("lists", "create", "team@lists.test").code == 0
    listing = run("domains", "list")
    assert listing.code == 0
    assert listing.out.splitlines() == ["lists.test\t1\tOur lists", "other.test\t0\t"]
    r = run("domains", "remove", "lists.test")
    assert r.code == 0
    assert "removed domain lists.test" in r.out
    assert run("domains", "list").out.splitlines() == ["other.test\t0\t"]
    assert table(db)["MailingList"] == 0


def test_domains_errors_name_the_field_and_change_nothing(run, db):
    assert run("domains", "add", "lists.test", "--description", "first").code == 0
    before = table(db)
    r = run("domains", "add", "LISTS.test", "--description", "second")
    assert r.code == 1
    assert r.err.startswith("mtaplugin: error: mail_host: ")
    assert "lists.test" in r.err
    bad = run("domains", "add", "not a domain")
    assert bad.code == 1
    assert "mail_host" in bad.err
    gone = run("domains", "remove", "nowhere.test")
    assert gone.code == 1
    assert "mail_host" in gone.err and "nowhere.test" in gone.err
    assert table(db) == before
    assert run("domains", "list").out.splitlines() == ["lists.test\t0\tfirst"]


# --- lists --------------------------------------------------------------------------------
def test_lists_create_with_owners_list_show_remove(run, db):
    assert run("domains", "add", "lists.test").code == 0
    r = run(
        "lists",
        "create",
        "Team@lists.test",
        "--owner",
        "olive@example.com",
        "--owner",
        "Oscar <oscar@example.com>",
        "--display-name",
        "The Team",
        "--description",
        "talk",
    )
    assert (r.code, r.out.strip()) == (0, "created list team@lists.test")
    assert roster(db, "team@lists.test") == [
        ("olive@example.com", "owner", ""),
        ("oscar@example.com", "owner", ""),
    ]
    assert run("lists", "create", "news@lists.test", "--style", "legacy-announce").code == 0
    assert run("members", "add", "team@lists.test", "anne@example.com").code == 0
    # Owners are not counted as members.
    assert run("lists", "list").out.splitlines() == [
        "news@lists.test\t0\tNews",
        "team@lists.test\t1\tThe Team",
    ]
    assert run("lists", "list", "--domain", "lists.test").code == 0
    show = run("lists", "show", "news.lists.test")
    assert show.code == 0
    settings = dict(line.split(": ", 1) for line in show.out.splitlines())
    assert settings["list_name"] == "news"
    assert settings["list_id"] == "news.lists.test"
    assert settings["style_name"] == "legacy-announce"
    assert settings["default_nonmember_action"] == "reject"
    assert settings["allow_list_posts"] == "False"
    assert "id" not in settings
    assert "moderator_password" not in settings
    r = run("lists", "remove", "team@lists.test")
    assert r.code == 0
    assert "removed list team@lists.test" in r.out
    assert run("lists", "list").out.splitlines() == ["news@lists.test\t0\tNews"]
    assert table(db)["Member"] == 0


def test_lists_create_with_a_bad_owner_creates_nothing(run, db):
    assert run("domains", "add", "lists.test").code == 0
    before = table(db)
    r = run("lists", "create", "team@lists.test", "--owner", "ok@example.com", "--owner", "bad")
    assert r.code == 1
    assert "mtaplugin: error: email: " in r.err
    assert "'bad'" in r.err
    assert table(db) == before
    assert run("lists", "list").out == ""


LIST_ERRORS = [
    (["lists", "create", "team@lists.test", "--style", "fancy"], "style_name"),
    (["lists", "create", "team@nowhere.test"], "mail_host"),
    (["lists", "create", "team-owner@lists.test"], "fqdn_listname"),
    (["lists", "create", "team"], "fqdn_listname"),
    (["lists", "show", "nosuch@lists.test"], "list"),
    (["lists", "remove", "nosuch@lists.test"], "list"),
    (["lists", "list", "--domain", "nowhere.test"], "mail_host"),
]


def test_lists_errors_name_the_field_and_change_nothing(run, db):
    # One database for all the cases (a new PostgreSQL database per case is slow).
    assert run("domains", "add", "lists.test").code == 0
    before = table(db)
    for argv, field in LIST_ERRORS:
        r = run(*argv)
        assert r.code == 1, argv
        assert r.err.startswith(f"mtaplugin: error: {field}: "), (argv, r.err)
        assert table(db) == before, argv


def test_lists_create_duplicate(run, db, team: str):
    before = table(db)
    r = run("lists", "create", "TEAM@lists.test")
    assert r.code == 1
    assert "fqdn_listname" in r.err
    assert table(db) == before


# --- members ------------------------------------------------------------------------------
def test_members_add_one_by_argument(run, db, team: str):
    r = run("members", "add", team, "Anne <Anne@Example.com>")
    assert r.code == 0
    assert r.out.strip() == f"added anne@example.com as member of {team}"
    assert roster(db, team) == [("anne@example.com", "member", "Anne")]


def test_members_add_several_and_roles(run, db, team: str):
    r = run("members", "add", team, "anne@example.com", "bob@example.com", "--quiet")
    assert r.code == 0
    assert r.out.strip() == f"added 2, already there 0, to {team}"
    r = run("members", "add", team, "anne@example.com", "carol@example.com", "--quiet")
    assert r.out.strip() == f"added 1, already there 1, to {team}"
    assert run("members", "add", team, "mod@example.com", "--role", "moderator").code == 0
    assert run("members", "add", team, "anne@example.com", "--role", "OWNER").code == 0
    assert roster(db, team) == [
        ("anne@example.com", "member", ""),
        ("bob@example.com", "member", ""),
        ("carol@example.com", "member", ""),
        ("mod@example.com", "moderator", ""),
        ("anne@example.com", "owner", ""),
    ]


def test_members_add_from_file(run, db, team: str, tmp_path: Path):
    path = tmp_path / "people.txt"
    path.write_text(
        "# new members\nAnne Person <anne@example.com>\n\nbob@example.com\nBOB@example.com\n",
        encoding="utf-8",
    )
    r = run("members", "add", team, "--file", str(path), "--quiet")
    assert r.code == 0, r.err
    assert r.out.strip() == f"added 2, already there 0, to {team}"
    assert roster(db, team) == [
        ("anne@example.com", "member", "Anne Person"),
        ("bob@example.com", "member", ""),
    ]


def test_members_add_file_with_one_bad_line_adds_nobody(run, db, team: str, tmp_path: Path):
    path = tmp_path / "people.txt"
    path.write_text(
        "anne@example.com\nbob@example.com\nnot an address\ncarol@example.com\n"
        "dave@example.com, erin@example.com\n",
        encoding="utf-8",
    )
    before = table(db)
    r = run("members", "add", team, "--file", str(path))
    assert r.code == 1
    assert "line 3: " in r.err
    assert "'not an address'" in r.err
    # Two addresses on one line are not silently cut down to the first.
    assert "line 5: " in r.err
    assert "nothing was changed" in r.err
    assert table(db) == before
    assert roster(db, team) == []


def test_members_add_from_stdin(db, team: str, cli_env: str):
    people = "Anne <anne@example.com>\nbob@example.com\n"
    proc = run_process(
        "members",
        "add",
        team,
        "--file",
        "-",
        "--role",
        "nonmember",
        env={"MTAPLUGIN_DATABASE_URL": cli_env},
        stdin=people,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"added 2, already there 0, to {team}"
    assert roster(db, team) == [
        ("anne@example.com", "nonmember", "Anne"),
        ("bob@example.com", "nonmember", ""),
    ]


def test_members_add_from_stdin_with_a_bad_line(db, team: str, cli_env: str):
    before = table(db)
    proc = run_process(
        "members",
        "add",
        team,
        "--file",
        "-",
        env={"MTAPLUGIN_DATABASE_URL": cli_env},
        stdin="anne@example.com\nanne@@example.com\n",
    )
    assert proc.returncode == 1
    assert "line 2: " in proc.stderr
    assert table(db) == before


MEMBER_ADD_ERRORS = [
    (["anne@example.com", "--role", "boss"], "role: "),
    (["anne@example.com", "--delivery-mode", "pigeon"], "delivery_mode: "),
    (["not-an-address"], "line 1: "),
    (["anne@example.com", "bob@example", "x y@example.com"], "line 3: "),
    (["--file", "/nonexistent/people.txt"], "--file: "),
    ([], "no addresses given"),
]


def test_members_add_errors_change_nothing(run, db, team: str):
    before = table(db)
    for extra, message in MEMBER_ADD_ERRORS:
        r = run("members", "add", team, *extra)
        assert r.code == 1, extra
        assert message in r.err, (extra, r.err)
        assert table(db) == before, extra


def test_members_add_to_unknown_list(run, db, team: str):
    before = table(db)
    r = run("members", "add", "nosuch@lists.test", "anne@example.com", "bob@example.com")
    assert r.code == 1
    assert r.err.startswith("mtaplugin: error: list: ")
    assert table(db) == before


def test_members_add_existing_member_by_argument(run, db, team: str):
    assert run("members", "add", team, "anne@example.com").code == 0
    before = table(db)
    r = run("members", "add", team, "ANNE@example.com")
    assert r.code == 1
    assert r.err.startswith("mtaplugin: error: email: ")
    assert table(db) == before


def test_members_list(run, team: str):
    run("members", "add", team, "Bob <bob@example.com>")
    # No digest is built yet: a digest mode is refused, naming the option, and nothing added.
    refused = run("members", "add", team, "anne@example.com", "--delivery-mode", "mime_digests")
    assert refused.code == 1
    assert refused.err.startswith(
        "mtaplugin: error: delivery_mode: digest delivery is not active yet"
    )
    run("members", "add", team, "anne@example.com", "--delivery-mode", "regular")
    run("members", "add", team, "olive@example.com", "--role", "owner")
    r = run("members", "list", team)
    assert r.code == 0
    assert r.out.splitlines() == [
        "anne@example.com\tmember\tregular",
        "bob@example.com (Bob)\tmember\tregular",
        "olive@example.com\towner\tregular",
    ]
    owners = run("members", "list", team, "--role", "owner")
    assert owners.out.splitlines() == ["olive@example.com\towner\tregular"]
    assert run("members", "list", team, "--role", "boss").code == 1


def test_members_remove(run, db, team: str):
    run(
        "members",
        "add",
        team,
        "anne@example.com",
        "bob@example.com",
        "carol@example.com",
        "--quiet",
    )
    run("members", "add", team, "anne@example.com", "--role", "owner")
    r = run("members", "remove", team, "Anne@Example.com", "bob@example.com")
    assert r.code == 0
    assert r.out.splitlines() == ["removed Anne@Example.com", "removed bob@example.com"]
    assert roster(db, team) == [
        ("carol@example.com", "member", ""),
        ("anne@example.com", "owner", ""),
    ]


def test_members_remove_with_one_unknown_removes_nobody(run, db, team: str):
    run("members", "add", team, "anne@example.com", "bob@example.com", "--quiet")
    before = table(db)
    r = run("members", "remove", team, "anne@example.com", "nobody@example.com")
    assert r.code == 1
    assert r.err.startswith("mtaplugin: error: email: ")
    assert "nobody@example.com" in r.err
    assert "removed" not in r.out
    assert table(db) == before
    # The owner role is separate: anne is not an owner.
    r = run("members", "remove", team, "anne@example.com", "--role", "owner")
    assert r.code == 1
    assert [e for e, role, _n in roster(db, team) if role == MemberRole.member.value] == [
        "anne@example.com",
        "bob@example.com",
    ]


def test_usage_errors_exit_2():
    with pytest.raises(SystemExit) as info:
        main(["members", "remove", "team@lists.test"])
    assert info.value.code == 2


def test_requests_invite_list_accept_and_reject(run, db):
    from mtaplugin.manage import subscriptions
    from mtaplugin.model.enums import SubscriptionPolicy

    assert run("domains", "add", "req.example").code == 0
    assert run("lists", "create", "team@req.example").code == 0
    with db.begin() as s:
        mlist = lists.get(s, "team@req.example")
        mlist.subscription_policy = SubscriptionPolicy.moderate
        _st, keep = subscriptions.request_subscription(s, mlist, "a@example.net", pre_verified=True)
        _st, drop = subscriptions.request_subscription(s, mlist, "b@example.net", pre_verified=True)
    listing = run("requests", "list", "team@req.example")
    assert listing.code == 0
    assert keep in listing.out and drop in listing.out and "moderator" in listing.out
    assert run("requests", "accept", "team@req.example", keep, "--as", "o@x.example").out == (
        f"{keep}\tsubscribed\n"
    )
    assert run("requests", "reject", "team@req.example", drop, "--reason", "no").code == 0
    bad = run("requests", "accept", "team@req.example", drop)
    assert bad.code == 1 and "token" in bad.err
    invited = run("members", "invite", "team@req.example", "c@example.net")
    assert invited.code == 0 and "c@example.net" in invited.out
    with db() as s:
        mlist = lists.get(s, "team@req.example")
        roster = [a.email for _m, a in members.roster(s, mlist, MemberRole.member)]
        assert roster == ["a@example.net"]
        pending = subscriptions.pending_requests(s, mlist)
        assert [p.email for p in pending] == ["c@example.net"]
