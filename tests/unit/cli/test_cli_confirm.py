"""Destructive commands show what would go and need ``--yes`` or the name typed at a
terminal; without either nothing changes (on SQLite and PostgreSQL)."""

from __future__ import annotations

import argparse

import pytest

from mtaplugin.cli import confirm
from tests.unit.cli.util import table


@pytest.fixture
def populated(run, db) -> dict[str, int]:
    assert run("domains", "add", "lists.test").code == 0
    assert run("lists", "create", "team@lists.test").code == 0
    assert run("lists", "create", "news@lists.test").code == 0
    assert run("members", "add", "team@lists.test", "a@example.com", "b@example.com").code == 0
    assert run("dkim", "keygen", "lists.test", "--bits", "1024").code == 0
    return table(db)


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (
            ("domains", "remove", "lists.test"),
            ["the domain lists.test", "team@lists.test and its 2 members", "news@lists.test"],
        ),
        (("lists", "remove", "team@lists.test"), ["team@lists.test and its 2 members"]),
        (
            ("members", "remove", "team@lists.test", "a@example.com", "b@example.com"),
            ["a@example.com (member of team@lists.test)", "b@example.com"],
        ),
        (("dkim", "remove", "lists.test"), ["DKIM key", "lists.test"]),
    ],
)
def test_without_yes_and_without_a_terminal_nothing_goes(run, db, populated, argv, shown):
    r = run(*argv)
    assert r.code == confirm.NOT_CONFIRMED
    assert "This removes:" in r.err
    for text in shown:
        assert text in r.err
    assert "--yes" in r.err and "nothing was changed" in r.err
    assert table(db) == populated


def test_with_yes_the_domain_and_all_its_lists_go(run, db, populated):
    r = run("domains", "remove", "lists.test", "--yes")
    assert r.code == 0 and "removed domain lists.test" in r.out
    assert "team@lists.test and its 2 members" in r.err
    assert table(db)["MailingList"] == 0


def test_at_a_terminal_the_name_typed_decides(run, db, populated, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    answers = iter(["team", "TEAM@lists.test"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    wrong = run("lists", "remove", "team@lists.test")
    assert wrong.code == confirm.NOT_CONFIRMED and "did not match" in wrong.err
    assert table(db) == populated
    right = run("lists", "remove", "team@lists.test")
    assert right.code == 0 and "removed list team@lists.test" in right.out
    assert table(db)["MailingList"] == 1


def test_mass_removal_from_a_file_asks_even_for_one_address(run, db, populated, tmp_path):
    path = tmp_path / "gone.txt"
    path.write_text("a@example.com\n", encoding="utf-8")
    r = run("members", "remove", "team@lists.test", "--file", str(path))
    assert r.code == confirm.NOT_CONFIRMED and "a@example.com" in r.err
    assert table(db) == populated
    r = run("members", "remove", "team@lists.test", "--file", str(path), "--yes")
    assert r.code == 0 and r.out.splitlines() == ["removed a@example.com"]


def test_one_named_member_is_removed_as_asked(run, db, populated):
    r = run("members", "remove", "team@lists.test", "a@example.com")
    assert r.code == 0 and "This removes" not in r.err


def test_confirmed_reads_the_answer_and_an_end_of_input_is_no():
    args = argparse.Namespace(yes=False)

    def eof(prompt: str) -> str:
        raise EOFError

    assert confirm.confirmed(args, ["x"], "name", ask=lambda p: " Name ", interactive=lambda: True)
    assert not confirm.confirmed(args, ["x"], "name", ask=eof, interactive=lambda: True)
    assert not confirm.confirmed(args, ["x"], "name", interactive=lambda: False)
    assert confirm.confirmed(argparse.Namespace(yes=True), ["x"], "name")
