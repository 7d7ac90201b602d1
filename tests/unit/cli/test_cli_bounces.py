"""``mtaplugin bounces list`` and ``mtaplugin members list --bounces``: what bounce
processing stored, shown to the list's administrator (the rows are written here directly)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.enums import BounceContext, BounceKind, MemberRole
from mtaplugin.manage import lists, members
from mtaplugin.model import BounceEvent
from tests.helpers import disabled_by_bounces


def _bounce(
    db: sessionmaker[Session], name: str, email: str, at: datetime, **values: object
) -> None:
    with db.begin() as s:
        mlist = lists.get(s, name)
        s.add(BounceEvent(mailing_list_id=mlist.id, email=email, at=at, **values))


@pytest.fixture
def bounced(run, db: sessionmaker[Session], team: str) -> datetime:
    """anne disabled by bounces, bob with one bounce; their events; one event of another
    list.  Returns the time of the newest event."""
    assert run("members", "add", team, "anne@example.com", "bob@example.com", "--quiet").code == 0
    assert run("lists", "create", "other@lists.test").code == 0
    now = datetime.now(UTC).replace(microsecond=0)
    with db.begin() as s:
        mlist = lists.get(s, team)
        anne = members.get(s, mlist, "anne@example.com", MemberRole.member)
        bounced, warned = (
            datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
            datetime(2026, 12, 2, 9, 30, tzinfo=UTC),
        )
        disabled_by_bounces(anne, bounced, warned)
        members.get(s, mlist, "bob@example.com", MemberRole.member).bounce_score = 1
    _bounce(
        db,
        team,
        "anne@example.com",
        now - timedelta(days=10),
        status="5.1.1",
        diagnostic="smtp; 550 5.1.1 <anne@example.com>:\n    user unknown",
        processed=True,
    )
    _bounce(db, team, "bob@example.com", now - timedelta(days=2), kind=BounceKind.delayed)
    _bounce(
        db,
        team,
        "anne@example.com",
        now - timedelta(hours=1),
        status="5.1.1",
        context=BounceContext.probe,
    )
    _bounce(db, "other@lists.test", "zed@example.com", now, status="5.7.1")
    return now


def test_bounces_list_shows_the_newest_first(run, team: str, bounced: datetime):
    r = run("bounces", "list", team)
    assert r.code == 0, r.err
    lines = [line.split("\t") for line in r.out.splitlines()]
    assert [(c[1], c[2], c[3], c[5]) for c in lines] == [
        ("anne@example.com", "hard", "5.1.1", "pending, probe"),
        ("bob@example.com", "delayed", "-", "pending"),
        ("anne@example.com", "hard", "5.1.1", "processed"),
    ]
    newest = bounced - timedelta(hours=1)
    assert lines[0][0] == newest.strftime("%Y-%m-%d %H:%M UTC")
    # A diagnostic on several lines is shown on one; none is "-".
    assert lines[2][4] == "smtp; 550 5.1.1 <anne@example.com>: user unknown"
    assert lines[1][4] == "-"
    assert "zed@example.com" not in r.out  # another list's


def test_bounces_list_since_and_limit(run, team: str, bounced: datetime):
    recent = run("bounces", "list", team, "--since", "7").out.splitlines()
    assert [line.split("\t")[1] for line in recent] == ["anne@example.com", "bob@example.com"]
    assert len(run("bounces", "list", team, "--since", "0.5").out.splitlines()) == 1
    one = run("bounces", "list", team, "--limit", "1").out.splitlines()
    assert len(one) == 1 and "probe" in one[0]


def test_bounces_list_of_a_quiet_list(run, team: str):
    r = run("bounces", "list", team)
    assert r.code == 0 and r.out == ""
    assert f"no bounce events for {team}" in r.err


def test_bounces_list_bad_input_exits_2_and_names_it(run, team: str, capsys):
    r = run("bounces", "list", "nosuch@lists.test")
    assert r.code == 2
    assert r.err.strip() == ("mtaplugin bounces list: error: list: no such list: nosuch@lists.test")
    assert r.out == ""
    for argv, words in [
        (["--since", "soon"], "argument --since: expected a number of days, not 'soon'"),
        (["--since", "0"], "argument --since: expected more than 0 days"),
        (["--limit", "0"], "argument --limit: expected 1 or more"),
        (["--limit", "ten"], "argument --limit: expected a whole number, not 'ten'"),
    ]:
        with pytest.raises(SystemExit) as info:
            run("bounces", "list", team, *argv)
        assert info.value.code == 2
        assert words in capsys.readouterr().err


def test_members_list_bounces_adds_the_bounce_record(run, team: str, bounced: datetime):
    plain = run("members", "list", team, "--role", "member").out.splitlines()
    assert plain == ["anne@example.com\tmember\tregular", "bob@example.com\tmember\tregular"]
    r = run("members", "list", team, "--role", "member", "--bounces")
    assert r.code == 0, r.err
    assert r.out.splitlines() == [
        "anne@example.com\tmember\tregular\t5\t2026-12-01 09:30 UTC\t1"
        "\tdisabled by bounces on 2026-12-01",
        "bob@example.com\tmember\tregular\t1\t-\t0\tenabled",
    ]
