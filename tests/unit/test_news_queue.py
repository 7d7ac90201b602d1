"""List to news: articles queued with the decision (or the release), and the news-post
job that posts them with retries, on a ManualClock, on SQLite and PostgreSQL, against a
stand-in news server (the real INN is in tests/integration)."""

from __future__ import annotations

import email
from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import partial

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import ManualClock
from mtaplugin.config import NntpSettings, Settings
from mtaplugin.db import engine_of
from mtaplugin.engine import ListEngine
from mtaplugin.enums import NewsgroupModeration
from mtaplugin.manage import lists
from mtaplugin.model import NewsArticle
from mtaplugin.news import GroupStatus, NewsError, NewsServer
from mtaplugin.news import queue as news_queue
from mtaplugin.posting.verdict import Accept
from mtaplugin.vocabulary.job import JobContext
from mtaplugin.wiring import build as build_world
from mtaplugin.worker.registry import NEWS_POST
from tests.helpers import drain, envelope, make_post
from tests.unit.handoff_story import (
    START,
    backs_off_then_goes,
    given_up_after_five_days,
    held_then_released,
)
from tests.unit.sites import Site


class FakeServer(NewsServer):
    """Takes articles, or fails as told: ``down`` (cannot connect), ``refuse`` (5xx)."""

    def __init__(self, *refuse: bytes) -> None:
        self.posted: list[bytes] = []
        self.down = False
        self.refuse = set(refuse)
        self.sessions = 0

    def __call__(self) -> FakeServer:
        return self

    def __enter__(self) -> FakeServer:
        if self.down:
            raise NewsError("cannot connect to the news server: refused", temporary=True)
        self.sessions += 1
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def post(self, article: bytes) -> None:
        if any(mark in article for mark in self.refuse):
            raise NewsError("POST: 441 ... no, 550 refused for good", temporary=False)
        self.posted.append(article)

    def group(self, name: str) -> GroupStatus:
        return GroupStatus(0, 1, 0)

    def article(self, number: int) -> bytes | None:
        return None


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def gatewaying(site: Site) -> Iterator[Site]:
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        mlist.gateway_to_news = True
        mlist.linked_newsgroup = "local.test"
    yield site
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        mlist.gateway_to_news = False
        mlist.newsgroup_moderation = NewsgroupModeration.none
        s.query(NewsArticle).filter(NewsArticle.mailing_list_id == mlist.id).delete()


def engine_for(site: Site, clock: ManualClock) -> ListEngine:
    return ListEngine(site.sessions, site_owner="postmaster@site.test", clock=clock)


def post(site: Site, clock: ManualClock, *subjects: str, news_server: bool = True) -> None:
    """Post each of ``subjects`` and let the worker fan them out (``news_server``: whether
    the site has one, as the worker's settings say)."""
    engine = engine_for(site, clock)
    for subject in subjects:
        raw = make_post("Anne <anne@example.com>", site.address, subject)
        env = envelope(site.address, mail_from="anne@example.com", queue_id="Q1")
        verdict = engine.decide(env, raw)
        assert isinstance(verdict, Accept), verdict
    drain(site.sessions, news=news_server)


def run(sessions: sessionmaker[Session], server: FakeServer, now: datetime) -> int:
    return news_queue.post_due(sessions, server, now)


def test_an_accepted_post_is_queued_cleansed_with_its_message_id(
    gatewaying: Site, clock: ManualClock
) -> None:
    post(gatewaying, clock, "news one")
    (row,) = gatewaying.rows(NewsArticle)
    msg = email.message_from_bytes(row.article)
    assert row.newsgroup == "local.test"
    assert msg["Newsgroups"] == "local.test"
    assert msg["Message-ID"]
    assert "news one" in msg["Subject"]
    assert msg["Received"] is None
    assert row.attempts == 0 and row.next_attempt_at == START and not row.failed


def test_nothing_is_queued_when_the_list_or_the_site_does_not_gateway(
    site: Site, gatewaying: Site, clock: ManualClock
) -> None:
    post(gatewaying, clock, "site off", news_server=False)
    assert gatewaying.rows(NewsArticle) == []
    with site.sessions.begin() as s:
        lists.get(s, site.address).gateway_to_news = False
    post(site, clock, "list off")
    assert site.rows(NewsArticle) == []


def test_the_job_posts_and_removes_and_retries_with_back_off(
    gatewaying: Site, clock: ManualClock
) -> None:
    post(gatewaying, clock, "first", "second")
    server = FakeServer()
    post_due = partial(news_queue.post_due, gatewaying.sessions, server)
    backs_off_then_goes(gatewaying, NewsArticle, post_due, server, error="cannot connect")
    subjects = [email.message_from_bytes(a)["Subject"] for a in server.posted]
    assert [s.split()[-1] for s in subjects] == ["first", "second"]


def test_a_refused_article_is_kept_as_failed_and_the_rest_go(
    gatewaying: Site, clock: ManualClock
) -> None:
    post(gatewaying, clock, "refuse-me", "fine")
    server = FakeServer(b"refuse-me")
    assert run(gatewaying.sessions, server, START) == 1
    (row,) = gatewaying.rows(NewsArticle)
    assert row.failed and "550" in row.last_error and row.attempts == 1
    with gatewaying.sessions() as s:
        assert news_queue.waiting(s, row.mailing_list_id) == 0
    assert run(gatewaying.sessions, server, START + timedelta(hours=2)) == 0


def test_given_up_after_five_days(gatewaying: Site, clock: ManualClock) -> None:
    post(gatewaying, clock, "patient")
    server = FakeServer()
    given_up_after_five_days(
        gatewaying, NewsArticle, partial(news_queue.post_due, gatewaying.sessions, server), server
    )


def test_back_off_doubles_up_to_an_hour() -> None:
    assert [news_queue.backoff(n).total_seconds() for n in (1, 2, 3, 7, 8, 50)] == [
        60, 120, 240, 3600, 3600, 3600,
    ]  # fmt: skip


def test_a_released_post_carries_the_lists_approved_for_a_moderated_group(
    gatewaying: Site, clock: ManualClock
) -> None:
    """``Approved:`` names the list's posting address, whoever released the post (the
    list's moderation let it through; docs/usenet.md)."""
    with gatewaying.sessions.begin() as s:
        lists.get(s, gatewaying.address).newsgroup_moderation = NewsgroupModeration.moderated
    held_then_released(gatewaying, engine_for(gatewaying, clock), NewsArticle, news=True)
    (row,) = gatewaying.rows(NewsArticle)
    assert email.message_from_bytes(row.article)["Approved"] == gatewaying.address


def test_a_post_released_on_a_site_without_a_news_server_queues_no_article(
    gatewaying: Site, clock: ManualClock
) -> None:
    """The list gateways, the site has no news server ([nntp] host empty): the released
    post reaches the members and the archive, and no article waits for a server that
    does not exist (before, the release queued one that nothing ever sent)."""
    held_then_released(gatewaying, engine_for(gatewaying, clock), NewsArticle, news=False)
    assert gatewaying.rows(NewsArticle) == []
    (copy,) = [r for r in gatewaying.outbox() if r.kind == "release"]
    assert "anne@example.com" in copy.recipients


def test_the_job_does_nothing_without_a_news_server(gatewaying: Site, clock: ManualClock) -> None:
    post(gatewaying, clock, "no server")
    settings = Settings(nntp=NntpSettings(host=""))
    world = build_world(settings, db=engine_of(gatewaying.sessions), clock=clock)
    assert NEWS_POST.run(JobContext(world, START)) == 0
    assert gatewaying.rows(NewsArticle)[0].attempts == 0
