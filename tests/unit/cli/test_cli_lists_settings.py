"""``mtaplugin lists get|set``: a setting read and written under its REST name, checked by
the REST API's own parsers (the same refusals, nothing changed on a bad value)."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.enums import NewsgroupModeration
from mtaplugin.manage import lists
from tests.unit.cli.conftest import Run


def test_set_then_get_a_setting(run: Run, db: sessionmaker[Session], team: str) -> None:
    assert run("lists", "set", team, "newsgroup_moderation", "moderated").code == 0
    assert run("lists", "set", team, "gateway_to_news", "true").code == 0
    assert (
        run("lists", "set", team, "accept_these_nonmembers", "a@example.org", "^.*@b\\.org$").code
        == 0
    )
    with db() as s:
        mlist = lists.get(s, team)
        assert mlist.newsgroup_moderation is NewsgroupModeration.moderated
        assert mlist.gateway_to_news is True
        assert mlist.accept_these_nonmembers == ["a@example.org", "^.*@b\\.org$"]
    got = run("lists", "get", team, "newsgroup_moderation")
    assert got.code == 0 and got.out.strip() == "moderated"
    every = run("lists", "get", team)
    assert "gateway_to_news: true" in every.out and "fqdn_listname: team@lists.test" in every.out


def test_a_bad_value_names_the_field_and_changes_nothing(
    run: Run, db: sessionmaker[Session], team: str
) -> None:
    bad = run("lists", "set", team, "max_message_size", "huge")
    assert bad.code == 2 and 'Invalid Parameter "max_message_size"' in bad.err
    bad = run("lists", "set", team, "newsgroup_moderation", "sometimes")
    assert bad.code == 2 and "newsgroup_moderation" in bad.err
    read_only = run("lists", "set", team, "list_id", "x.y")
    assert read_only.code == 2 and "Read-only attribute: list_id" in read_only.err
    unknown = run("lists", "get", team, "no_such_setting")
    assert unknown.code == 2 and "no_such_setting" in unknown.err
    with db() as s:
        mlist = lists.get(s, team)
        assert mlist.max_message_size == 40
        assert mlist.newsgroup_moderation is NewsgroupModeration.none


def test_a_line_break_or_control_character_is_refused_naming_the_setting(
    run: Run, db: sessionmaker[Session], team: str
) -> None:
    """L1 (docs/security.md): a text that goes into header fields stays one line."""
    for key, value in (
        ("display_name", 'Team"\r\nX-Injected: yes'),
        ("subject_prefix", "[t]\rBcc: x"),
        ("description", "a\x00b"),
        ("reply_to_address", "^.*@example\\.org$"),
    ):
        bad = run("lists", "set", team, key, value)
        assert bad.code == 2 and f'Invalid Parameter "{key}"' in bad.err, (key, bad.err)
    created = run("lists", "create", "other@lists.test", "--display-name", "O\nX: y")
    assert created.code != 0 and "display_name" in created.err
    with db() as s:
        mlist = lists.get(s, team)
        assert "\r" not in mlist.display_name + mlist.subject_prefix
        assert mlist.description == "" and mlist.reply_to_address == ""
