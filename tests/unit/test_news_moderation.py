"""Moderated newsgroups: the news-moderation rule and the Approved: header's value."""

from __future__ import annotations

import pytest

from mtaplugin.enums import Action, NewsgroupModeration
from mtaplugin.model import MailingList
from mtaplugin.news.moderation import approved_by
from mtaplugin.posting.pipeline import POSTING_RULES
from mtaplugin.posting.rules.base import PostContext
from mtaplugin.posting.rules.news import NEWS_MODERATION, news_moderation
from mtaplugin.vocabulary.envelope import Envelope, Post


def linked(moderation: NewsgroupModeration, to_news: bool = True) -> MailingList:
    return MailingList(
        list_name="team",
        mail_host="example.org",
        gateway_to_news=to_news,
        linked_newsgroup="local.test",
        newsgroup_moderation=moderation,
    )


def ctx(mlist: MailingList) -> PostContext:
    raw = b"From: ann@example.com\r\nSubject: hi\r\n\r\nbody\r\n"
    return PostContext(mlist=mlist, post=Post(raw), envelope=Envelope(), sender="ann")


def test_a_list_of_a_moderated_group_holds_every_post() -> None:
    hit = news_moderation(ctx(linked(NewsgroupModeration.moderated)))
    assert hit is not None and hit.action is Action.hold and hit.rule == NEWS_MODERATION
    assert "local.test" in hit.reason


@pytest.mark.parametrize(
    "mlist",
    [
        linked(NewsgroupModeration.none),
        linked(NewsgroupModeration.open_moderated),
        linked(NewsgroupModeration.moderated, to_news=False),
    ],
)
def test_no_hold_otherwise(mlist: MailingList) -> None:
    assert news_moderation(ctx(mlist)) is None


def test_an_article_gated_from_the_group_is_not_held_again() -> None:
    gated = ctx(linked(NewsgroupModeration.moderated))
    gated = PostContext(
        mlist=gated.mlist, post=gated.post, envelope=Envelope(gated_from="local.test"), sender="ann"
    )
    assert news_moderation(gated) is None


def test_the_rule_runs_after_the_moderation_rules_and_before_the_records() -> None:
    ids = [r.id for r in POSTING_RULES]
    assert ids.index("approved") < ids.index(NEWS_MODERATION)
    assert ids.index("nonmember-moderation") + 1 == ids.index(NEWS_MODERATION)
    assert ids.index(NEWS_MODERATION) + 1 == ids.index("administrivia")


@pytest.mark.parametrize(
    ("moderation", "expected"),
    [
        (NewsgroupModeration.none, None),
        (NewsgroupModeration.open_moderated, "team@example.org"),
        (NewsgroupModeration.moderated, "team@example.org"),
    ],
)
def test_approved_header_for_moderated_groups(
    moderation: NewsgroupModeration, expected: str | None
) -> None:
    assert approved_by(linked(moderation)) == expected


def test_the_usenet_settings_page_is_active() -> None:
    from mtaplugin.web.list_settings import GROUPS, fields

    title, names = GROUPS["usenet"]
    assert title == "Usenet" and "newsgroup_moderation" in names
    [choice] = [f for f in fields("usenet") if f.name == "newsgroup_moderation"]
    assert choice.choices == ("none", "open_moderated", "moderated")
