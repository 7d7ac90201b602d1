"""``mtaplugin news gate LIST`` in-process through ``main(argv)``, the news server an
in-memory double (the real INN: tests/integration/test_news_to_list.py)."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.enums import MemberRole
from mtaplugin.manage import lists, members
from mtaplugin.news import NewsError
from tests.unit.cli.conftest import Run
from tests.unit.newsserver import FakeNews

ARTICLE = (
    b"From: ann@example.com\r\nNewsgroups: local.test\r\nSubject: hello\r\n"
    b"Message-ID: <a1@news.example>\r\n\r\nbody\r\n"
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeNews:
    fake = FakeNews({"local.test": {1: ARTICLE}})
    monkeypatch.setattr("mtaplugin.news.connect", lambda settings: fake)
    return fake


def gating(db: sessionmaker[Session], name: str) -> None:
    with db.begin() as s:
        mlist = lists.get(s, name)
        mlist.gateway_to_mail, mlist.linked_newsgroup = True, "local.test"
        members.add(s, mlist, "ann@example.com", MemberRole.member)
        members.add(s, mlist, "bob@example.com", MemberRole.member)


def test_news_gate_polls_now_and_says_how_many(
    run: Run, db: sessionmaker[Session], team: str, server: FakeNews
) -> None:
    refused = run("news", "gate", team)
    assert refused.code == 2 and "gateway_to_mail" in refused.err
    gating(db, team)
    first = run("news", "gate", team)
    assert first.code == 0, first.err
    assert "first poll" in first.out
    server.add("local.test", ARTICLE.replace(b"a1@", b"a2@"))
    second = run("news", "gate", team)
    assert (second.code, second.out.strip()) == (
        0,
        "local.test: 1 articles gated to team@lists.test, 0 skipped",
    )
    again = run("news", "gate", team)
    assert "0 articles gated" in again.out


def test_news_gate_with_the_server_down_exits_1_naming_why(
    run: Run, db: sessionmaker[Session], team: str, server: FakeNews
) -> None:
    gating(db, team)
    server.group_error = NewsError("connection refused", temporary=True)
    result = run("news", "gate", team)
    assert result.code == 1 and "connection refused" in result.err


def test_news_gate_of_an_unknown_list(
    run: Run, db: sessionmaker[Session], server: FakeNews
) -> None:
    result = run("news", "gate", "nosuch@lists.test")
    assert result.code != 0 and "nosuch" in result.err
