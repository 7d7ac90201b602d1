"""List to news: the article a post becomes (pure: no database, no server)."""

from __future__ import annotations

import email

from mtaplugin.enums import NewsgroupModeration
from mtaplugin.model import MailingList
from mtaplugin.news.outgoing import article_for, gateways, split, unprefixed

RAW = (
    b"Received: from mx.example.com by lists.example.com\n"
    b"Received: from client by mx.example.com\n"
    b"From: Anne <anne@example.com>\n"
    b"To: team@lists.example.com\n"
    b"To: second@example.com\n"
    b"Cc: bob@example.com\n"
    b"Subject: [Team] Re: the plan\n"
    b"Message-ID: <plan.1@example.com>\n"
    b"NNTP-Posting-Host: leak.example.com\n"
    b"X-Trace: leak\n"
    b"X-Complaints-To: abuse@example.com\n"
    b"Xref: old.server comp.x:12\n"
    b"Path: old.server!not-for-mail\n"
    b"Approved: self@example.com\n"
    b"Lines: 99\n"
    b"X-Long: one\n"
    b"\tcontinued\n"
    b"\n"
    b"line one\n"
    b".line two\n"
    b"\n"
)


def team(**kw: object) -> MailingList:
    mlist = MailingList(list_name="team", mail_host="lists.example.com")
    mlist.gateway_to_news = True
    mlist.linked_newsgroup = "local.test"
    mlist.nntp_prefix_subject_too = True
    mlist.subject_prefix = "[Team] "
    mlist.newsgroup_moderation = NewsgroupModeration.none
    for k, v in kw.items():
        setattr(mlist, k, v)
    return mlist


def fields(article: bytes) -> list[tuple[str, bytes]]:
    return split(article)[0]


def names(article: bytes) -> list[str]:
    return [n for n, _ in fields(article)]


def header(article: bytes, name: str) -> list[str]:
    msg = email.message_from_bytes(article)
    return [str(v) for v in msg.get_all(name, [])]


def test_headers_servers_refuse_or_that_leak_go() -> None:
    art = article_for(team(), RAW)
    for gone in ("received", "nntp-posting-host", "x-trace", "x-complaints-to", "xref", "path"):
        assert gone not in names(art), gone
    assert header(art, "Approved") == []  # the poster cannot approve for the group


def test_newsgroups_message_id_and_lines() -> None:
    art = article_for(team(), RAW)
    assert header(art, "Newsgroups") == ["local.test"]
    assert header(art, "Message-ID") == ["<plan.1@example.com>"]
    assert header(art, "Lines") == ["3"]
    assert art.split(b"\r\n\r\n", 1)[1] == b"line one\r\n.line two\r\n\r\n"
    assert b"\n" not in art.replace(b"\r\n", b"")


def test_a_poster_s_newsgroups_are_kept_and_ours_added_once() -> None:
    raw = RAW.replace(b"X-Long", b"Newsgroups: comp.misc, local.test\nX-Long")
    assert header(article_for(team(), raw), "Newsgroups") == ["comp.misc,local.test"]
    raw = RAW.replace(b"X-Long", b"Newsgroups: comp.misc\nX-Long")
    assert header(article_for(team(), raw), "Newsgroups") == ["comp.misc,local.test"]


def test_duplicates_are_renamed() -> None:
    art = article_for(team(), RAW)
    assert header(art, "To") == ["team@lists.example.com"]
    assert header(art, "X-Original-To") == ["second@example.com"]
    assert header(art, "Cc") == ["bob@example.com"]
    assert b"X-Long: one\r\n\tcontinued\r\n" in art


def test_the_subject_prefix_only_with_nntp_prefix_subject_too() -> None:
    assert header(article_for(team(), RAW), "Subject") == ["[Team] Re: the plan"]
    art = article_for(team(nntp_prefix_subject_too=False), RAW)
    assert header(art, "Subject") == ["Re: the plan"]
    assert unprefixed("[team %d]", "[team 12] Re: x") == "Re: x"
    assert unprefixed("", "  a   b ") == "a b"


def test_approved_for_a_moderated_group() -> None:
    """The list's posting address, whoever let the post through (docs/usenet.md)."""
    for moderation in (NewsgroupModeration.moderated, NewsgroupModeration.open_moderated):
        mlist = team(newsgroup_moderation=moderation)
        assert header(article_for(mlist, RAW), "Approved") == ["team@lists.example.com"]


def test_which_lists_gateway() -> None:
    assert gateways(team())
    assert not gateways(team(gateway_to_news=False))
    assert not gateways(team(linked_newsgroup="  "))
