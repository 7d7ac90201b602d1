"""The ``mtaplugin`` command, run in-process through ``main(argv)`` and as a real process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import inspect, select

from mtaplugin.db import alembic_config, make_engine
from mtaplugin.enums import MemberRole
from mtaplugin.manage import lists, members
from mtaplugin.model import Domain
from tests.unit.cli.util import roster, run_process, table


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
    r = run("domains", "remove", "lists.test", "--yes")
    assert r.code == 0 and "removed domain lists.test" in r.out
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
    gone = run("domains", "remove", "nowhere.test", "--yes")
    assert gone.code == 1
    assert "mail_host" in gone.err and "nowhere.test" in gone.err
    assert table(db) == before
    assert run("domains", "list").out.splitlines() == ["lists.test\t0\tfirst"]


def test_domains_alias_is_checked_like_everywhere_else(run, db, monkeypatch):
    """The CLI is the site admin's, yet the alias domain of another domain, a public suffix
    and the site's own mail domains are refused, naming alias_domain (H3)."""
    monkeypatch.setenv("MTAPLUGIN_DOMAINS_SITE_MAIL_DOMAINS", "mx.site.test")
    r = run("domains", "add", "a.test", "--alias-domain", "lists.a.test")
    assert r.code == 0, r.err
    assert run("domains", "add", "b.test").code == 0
    for bad, why in (
        ("lists.a.test", "already a domain or an alias"),
        ("a.test", "already a domain or an alias"),
        ("co.uk", "public suffix"),
        ("mx.site.test", "site's own mail domains"),
    ):
        refused = run("domains", "alias", "b.test", bad)
        assert refused.code == 1
        assert refused.err.startswith("mtaplugin: error: alias_domain: ") and why in refused.err
    refused = run("domains", "add", "c.test", "--alias-domain", "com")
    assert refused.code == 1 and "alias_domain" in refused.err
    with db() as s:
        assert {d.mail_host: d.alias_domain for d in s.scalars(select(Domain))} == {
            "a.test": "lists.a.test",
            "b.test": None,
        }
    done = run("domains", "alias", "b.test", "lists.b.test")
    assert (done.code, done.out.strip()) == (0, "b.test: Alias domain now: lists.b.test")
    assert run("domains", "alias", "b.test", "").out.strip() == "b.test: Alias domain now: none"


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
    r = run("lists", "remove", "team@lists.test", "--yes")
    assert r.code == 0 and "removed list team@lists.test" in r.out
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
    (["lists", "remove", "nosuch@lists.test", "--yes"], "list"),
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


# --- requests ---------------------------------------------------------------------------
def test_requests_invite_list_accept_and_reject(run, db):
    from mtaplugin.enums import SubscriptionPolicy
    from mtaplugin.manage import subscriptions

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


# --- the command itself -------------------------------------------------------------------
def test_the_command_loads_no_database_code_until_a_command_needs_it():
    """Each noun imports what it uses inside its handlers: ``inject`` (run once per post by
    Exim's pipe) and ``--help`` do not pay for SQLAlchemy and the model."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, mtaplugin.cli; mtaplugin.cli.build_parser(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'sqlalchemy', 'tqdm'}))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
