"""``mtaplugin members``: the roster commands, and ``add``/``remove`` of members through
the subscription workflow (bans, welcome, goodbye, the owners' notice)."""

from __future__ import annotations

import email
import subprocess
from email.policy import default as default_policy
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.cli import main
from mtaplugin.enums import MemberRole
from mtaplugin.manage import bans, lists
from mtaplugin.model import AuditEntry, OutboxMessage
from tests.unit.cli.util import roster, run_process, table


# --- the roster -------------------------------------------------------------------------
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


def add_from_stdin(
    team: str, cli_env: str, lines: str, *more: str
) -> subprocess.CompletedProcess[str]:
    """``mtaplugin members add TEAM --file - MORE...`` in a process of its own, ``lines``
    on its standard input."""
    return run_process(
        "members",
        "add",
        team,
        "--file",
        "-",
        *more,
        env={"MTAPLUGIN_DATABASE_URL": cli_env},
        stdin=lines,
    )


def test_members_add_from_stdin(db, team: str, cli_env: str):
    people = "Anne <anne@example.com>\nbob@example.com\n"
    proc = add_from_stdin(team, cli_env, people, "--role", "nonmember")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"added 2, already there 0, to {team}"
    assert roster(db, team) == [
        ("anne@example.com", "nonmember", "Anne"),
        ("bob@example.com", "nonmember", ""),
    ]


def test_members_add_from_stdin_with_a_bad_line(db, team: str, cli_env: str):
    before = table(db)
    proc = add_from_stdin(team, cli_env, "anne@example.com\nanne@@example.com\n")
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
    refused = run("members", "add", team, "anne@example.com", "--delivery-mode", "weekly")
    assert refused.code == 1 and "delivery_mode" in refused.err
    run("members", "add", team, "anne@example.com", "--delivery-mode", "mime_digests")
    run("members", "add", team, "olive@example.com", "--role", "owner")
    r = run("members", "list", team)
    assert r.code == 0
    assert r.out.splitlines() == [
        "anne@example.com\tmember\tmime_digests",
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
    r = run("members", "remove", team, "Anne@Example.com", "bob@example.com", "--yes")
    assert r.code == 0
    assert r.out.splitlines() == ["removed anne@example.com", "removed bob@example.com"]
    assert roster(db, team) == [
        ("carol@example.com", "member", ""),
        ("anne@example.com", "owner", ""),
    ]


def test_members_remove_with_one_unknown_removes_nobody(run, db, team: str):
    run("members", "add", team, "anne@example.com", "bob@example.com", "--quiet")
    before = table(db)
    r = run("members", "remove", team, "anne@example.com", "nobody@example.com", "--yes")
    assert r.code == 1
    assert "mtaplugin: error: email: " in r.err
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
        main(["members", "add", "team@lists.test", "--role"])
    assert info.value.code == 2


def test_members_remove_without_addresses_removes_nothing(run, db, team: str):
    r = run("members", "remove", team)
    assert r.code == 1 and "no addresses given" in r.err


# --- through the subscription workflow ----------------------------------------------------
def notices(db: sessionmaker[Session], name: str) -> list[tuple[list[str], str]]:
    """(recipients, subject) of every notice the list queued, in order."""
    with db() as s:
        mlist = lists.get(s, name)
        rows = s.scalars(
            select(OutboxMessage)
            .where(OutboxMessage.mailing_list_id == mlist.id)
            .order_by(OutboxMessage.id)
        )
        return [
            (
                row.recipients,
                str(email.message_from_bytes(row.raw, policy=default_policy)["Subject"]),
            )
            for row in rows
            if row.kind == "notice"
        ]


def configure(db: sessionmaker[Session], name: str, **values: object) -> None:
    with db.begin() as s:
        mlist = lists.get(s, name)
        for key, value in values.items():
            setattr(mlist, key, value)


def ban(db: sessionmaker[Session], name: str | None, pattern: str) -> None:
    with db.begin() as s:
        bans.add(s, lists.get(s, name) if name else None, pattern)


WELCOME = 'Welcome to the "Team" mailing list'
GOODBYE = 'You have left the "Team" mailing list'


def test_a_banned_address_is_refused_and_nothing_is_stored(run, db, team: str):
    ban(db, team, "spam@example.com")
    before = table(db)
    r = run("members", "add", team, "Spam@Example.com")
    assert r.code == 1
    assert r.err.startswith("mtaplugin: error: email: ")
    assert "spam@example.com" in r.err and "banned" in r.err and team in r.err
    assert table(db) == before
    assert notices(db, team) == []


def test_a_site_wide_pattern_ban_is_refused_too(run, db, team: str):
    ban(db, None, "^.*@spammers\\.example$")
    r = run("members", "add", team, "joe@spammers.example")
    assert r.code == 1
    assert "joe@spammers.example" in r.err and "banned" in r.err
    assert roster(db, team) == []


def test_a_batch_adds_the_others_and_reports_each_refusal(run, db, team: str, tmp_path: Path):
    ban(db, team, "spam@example.com")
    ban(db, team, "^.*@spammers\\.example$")
    path = tmp_path / "people.txt"
    path.write_text(
        "anne@example.com\nspam@example.com\nbob@example.com\njoe@spammers.example\n",
        encoding="utf-8",
    )
    r = run("members", "add", team, "--file", str(path), "--quiet")
    assert r.code == 1
    assert r.out.strip() == f"added 2, already there 0, to {team}"
    refusals = [line for line in r.err.splitlines() if line.startswith("not added: ")]
    assert len(refusals) == 2
    assert "spam@example.com" in refusals[0] and "banned" in refusals[0]
    assert "joe@spammers.example" in refusals[1] and "banned" in refusals[1]
    assert [e for e, _role, _n in roster(db, team)] == ["anne@example.com", "bob@example.com"]
    with db() as s:
        assert (
            s.scalar(
                select(AuditEntry.id).where(
                    AuditEntry.detail["email"].as_string() == "spam@example.com"
                )
            )
            is None
        )


def test_a_new_member_is_welcomed_unless_told_not_to(run, db, team: str):
    assert run("members", "add", team, "anne@example.com").code == 0
    assert notices(db, team) == [(["anne@example.com"], WELCOME)]
    assert run("members", "add", team, "bob@example.com", "--no-welcome-msg").code == 0
    assert notices(db, team) == [(["anne@example.com"], WELCOME)]
    assert [e for e, _role, _n in roster(db, team)] == ["anne@example.com", "bob@example.com"]


def test_the_welcome_follows_the_list_setting_unless_a_flag_says(run, db, team: str):
    configure(db, team, send_welcome_message=False)
    assert run("members", "add", team, "anne@example.com", "bob@example.com", "--quiet").code == 0
    assert notices(db, team) == []
    assert run("members", "add", team, "carol@example.com", "--welcome-msg").code == 0
    assert notices(db, team) == [(["carol@example.com"], WELCOME)]


def test_a_mass_add_welcomes_each_new_member_once(run, db, team: str):
    r = run("members", "add", team, "anne@example.com", "bob@example.com", "--quiet")
    assert r.code == 0
    r = run("members", "add", team, "anne@example.com", "carol@example.com", "--quiet")
    assert r.out.strip() == f"added 1, already there 1, to {team}"
    assert notices(db, team) == [
        (["anne@example.com"], WELCOME),
        (["bob@example.com"], WELCOME),
        (["carol@example.com"], WELCOME),
    ]


def test_a_removed_member_gets_a_goodbye_unless_told_not_to(run, db, team: str):
    run("members", "add", team, "anne@example.com", "bob@example.com", "--no-welcome-msg")
    assert run("members", "remove", team, "anne@example.com").code == 0
    assert notices(db, team) == [(["anne@example.com"], GOODBYE)]
    assert run("members", "remove", team, "bob@example.com", "--no-goodbye-msg").code == 0
    assert notices(db, team) == [(["anne@example.com"], GOODBYE)]
    assert roster(db, team) == []


def test_the_goodbye_follows_the_list_setting_unless_a_flag_says(run, db, team: str):
    run("members", "add", team, "anne@example.com", "bob@example.com", "--no-welcome-msg")
    configure(db, team, send_goodbye_message=False)
    assert run("members", "remove", team, "anne@example.com").code == 0
    assert notices(db, team) == []
    assert run("members", "remove", team, "bob@example.com", "--goodbye-msg").code == 0
    assert notices(db, team) == [(["bob@example.com"], GOODBYE)]


@pytest.mark.parametrize(
    ("list_setting", "flags", "told"),
    [
        (False, [], False),
        (False, ["--admin-notify"], True),
        (True, [], True),
        (True, ["--no-admin-notify"], False),
    ],
)
def test_the_owners_are_told_as_the_list_or_the_flag_says(
    run, db, team: str, list_setting: bool, flags: list[str], told: bool
):
    run("members", "add", team, "olive@example.com", "--role", "owner")
    configure(db, team, admin_notify_mchanges=list_setting)
    quiet = ["--no-welcome-msg", *flags]
    assert run("members", "add", team, "anne@example.com", *quiet).code == 0
    assert run("members", "remove", team, "anne@example.com", "--no-goodbye-msg", *flags).code == 0
    expected = [
        (["olive@example.com"], f"{team}: anne@example.com joined"),
        (["olive@example.com"], f"{team}: anne@example.com left"),
    ]
    assert notices(db, team) == (expected if told else [])


def test_owners_moderators_and_nonmembers_are_roster_entries_without_notices(run, db, team):
    configure(db, team, admin_notify_mchanges=True)
    assert run("members", "add", team, "olive@example.com", "--role", "owner").code == 0
    assert run("members", "add", team, "mod@example.com", "--role", "moderator").code == 0
    assert run("members", "remove", team, "mod@example.com", "--role", "moderator").code == 0
    assert notices(db, team) == []


def test_the_audit_log_names_who_acted(run, db, team: str):
    assert run("members", "add", team, "anne@example.com", "--as", "admin@example.org").code == 0
    assert run("members", "remove", team, "anne@example.com").code == 0
    with db() as s:
        entries = [
            (a.action, a.actor) for a in s.scalars(select(AuditEntry).order_by(AuditEntry.id))
        ]
    assert entries[0] == ("member.subscribe", "admin@example.org")
    assert entries[1][0] == "member.unsubscribe" and entries[1][1].startswith("cli:")


def test_a_batch_never_adds_the_lists_own_addresses(run, db, team: str):
    r = run("members", "add", team, "anne@example.com", "team-request@lists.test", "--quiet")
    assert r.code == 1
    assert r.out.strip() == f"added 1, already there 0, to {team}"
    assert "not added: team-request@lists.test: a list cannot subscribe its own addresses" in r.err
    assert [e for e, _role, _n in roster(db, team)] == ["anne@example.com"]
