"""The command takes an action's options anywhere on its line, as people type them
(argparse's intermixed parsing), and ``--config``/``-v`` after the action too."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from mtaplugin.cli import _actions, build_parser
from mtaplugin.cli.common import Parser
from tests.unit.cli.test_cli_members import WELCOME, notices
from tests.unit.cli.util import roster


def test_options_between_and_after_the_addresses(run, db, team: str):
    # the line of the issue: "unrecognized arguments" before
    r = run("members", "add", team, "--no-welcome-msg", "anne@example.com", "bob@example.com")
    assert r.code == 0, r.err
    r = run("members", "add", team, "carol@example.com", "--no-welcome-msg", "dave@example.com")
    assert r.code == 0, r.err
    assert run("members", "add", team, "--role", "moderator", "mod@example.com").code == 0
    assert notices(db, team) == []  # --no-welcome-msg was heard each time
    assert roster(db, team) == [
        ("anne@example.com", "member", ""),
        ("bob@example.com", "member", ""),
        ("carol@example.com", "member", ""),
        ("dave@example.com", "member", ""),
        ("mod@example.com", "moderator", ""),
    ]
    assert run("members", "add", team, "erin@example.com").code == 0
    assert notices(db, team) == [(["erin@example.com"], WELCOME)]


def test_the_global_options_after_the_action(run, team: str, tmp_path):
    assert run("lists", "show", team, "-v").code == 0
    missing = tmp_path / "nowhere.toml"
    r = run("lists", "show", team, "--config", str(missing))
    assert r.code == 1 and str(missing) in r.err  # the file named after the action is read


def test_values_that_look_like_options_still_pass_after_dashes(run, team: str):
    r = run("lists", "set", team, "--", "subject_prefix", "-[x]-")
    assert r.code == 0, r.err
    assert "-[x]-" in run("lists", "show", team).out


def test_an_unknown_option_is_still_refused(run, team: str, capsys):
    with pytest.raises(SystemExit) as bad:
        run("members", "add", team, "--no-such-flag", "anne@example.com")
    assert bad.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_every_action_parses_intermixed():
    """argparse refuses intermixed parsing for some shapes (a positional in a mutually
    exclusive group, nargs=REMAINDER): no action may have one."""
    parser = build_parser()
    actions = _actions(parser)
    assert len(actions) > 50
    for action in actions:
        assert isinstance(action, Parser), action.prog
        with contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
            action.parse_known_args([])  # a TypeError here: that action cannot intermix
        for option in action._actions:
            assert option.nargs != argparse.REMAINDER, (action.prog, option.dest)
