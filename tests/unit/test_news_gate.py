"""News to list: the ``news-gate`` poll on SQLite and PostgreSQL, against an in-memory
news server -- exactly once across polls and racing runners, loops and malformed articles
skipped, a group that is missing or a server that is down leaves the watermark alone."""

from __future__ import annotations

import email
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import wiring
from mtaplugin.clock import ManualClock, system_clock
from mtaplugin.config import Settings
from mtaplugin.config.mail import NntpSettings
from mtaplugin.db import engine_of
from mtaplugin.engine import ListEngine
from mtaplugin.enums import NewsgroupModeration
from mtaplugin.frontends.news import Poll, poll
from mtaplugin.model.news import NewsWatermark
from mtaplugin.news import NewsError
from mtaplugin.news.articles import Skip, inspect
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.worker.registry import JOBS, NEWS_GATE
from mtaplugin.worker.runner import Runner
from tests.helpers import unique
from tests.unit.newsserver import FakeNews
from tests.unit.sites import Site

GROUP = "local.test"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(system_clock().replace(microsecond=0))


@pytest.fixture
def gate_engine(site: Site, clock: ManualClock) -> Iterator[ListEngine]:
    engine = ListEngine(site.sessions, site_owner="postmaster@site.test", clock=clock)
    yield engine
    engine.close()


@pytest.fixture
def news(site: Site) -> FakeNews:
    site.update(gateway_to_mail=True, linked_newsgroup=GROUP)
    server = FakeNews()
    server.groups[GROUP] = {}
    return server


def article(n: int, sender: str = "anne@example.com", extra: str = "") -> bytes:
    return (
        f"Path: news.example!not-for-mail\r\nFrom: Anne <{sender}>\r\n"
        f"Newsgroups: {GROUP}\r\nSubject: article {n}\r\n"
        f"Message-ID: <art{n}.{id(sender)}@news.example>\r\nTo: someone@else.example\r\n"
        f"{extra}\r\nbody {n}\r\n"
    ).encode()


def subjects(site: Site, rcpt: str = "bob@example.com") -> list[str]:
    return [str(m["Subject"]) for m in site.mails_to(rcpt)]


def watermark(sessions: sessionmaker[Session], site: Site) -> int | None:
    with sessions() as s:
        row = s.get(NewsWatermark, site.mlist().id)
        return None if row is None else row.last_number


@dataclass
class Gate:
    """The list ``team`` gating :data:`GROUP` of the in-memory news server, with the
    engine that decides the articles and the clock."""

    site: Site
    news: FakeNews
    engine: ListEngine
    clock: ManualClock

    def poll(self) -> Poll:
        return poll(self.site.mlist(), self.news, self.engine, self.clock())

    def started(self, then: int = 0) -> None:
        """The first poll: it sets the watermark and gates nothing; then ``then`` new
        articles (1, 2, ...) in the group."""
        self.news.add(GROUP, article(0))
        first = self.poll()
        assert first.started and first.gated == 0
        assert watermark(self.site.sessions, self.site) == 1
        assert self.site.outbox() == []
        for n in range(1, then + 1):
            self.news.add(GROUP, article(n))


@pytest.fixture
def gate(site: Site, news: FakeNews, gate_engine: ListEngine, clock: ManualClock) -> Gate:
    return Gate(site, news, gate_engine, clock)


def test_the_first_poll_only_sets_the_watermark_then_new_articles_are_gated_once(
    site: Site, news: FakeNews, gate: Gate
) -> None:
    gate.started()
    news.add(GROUP, article(1))
    news.add(GROUP, article(2))
    assert gate.poll().gated == 2
    # A second poll (a restart, the next run) gates nothing again.
    again = gate.poll()
    assert (again.gated, again.skipped, again.stopped) == (0, 0, "")
    assert subjects(site) == ["[Team] article 1", "[Team] article 2"]
    assert watermark(site.sessions, site) == 3
    # Decorated like a post: the list's headers, To: the list, the trace headers gone.
    copy = site.mails_to("bob@example.com")[0]
    assert site.list_id in str(copy["List-Id"])
    assert str(copy["To"]) == site.address
    assert str(copy["X-Originally-To"]) == "someone@else.example"
    assert copy["Path"] is None


def test_a_nonmember_article_is_held_like_a_nonmember_post(
    site: Site, news: FakeNews, gate: Gate
) -> None:
    gate.started()
    news.add(GROUP, article(1, sender="stranger@example.org"))
    assert gate.poll().gated == 1
    assert subjects(site) == []
    held = site.held()
    assert len(held) == 1
    assert gate.poll().gated == 0
    assert len(site.held()) == 1


def test_two_racing_runners_gate_each_article_once(site: Site, news: FakeNews, gate: Gate) -> None:
    gate.started(then=3)
    other = ListEngine(site.sessions, clock=gate.clock)
    inner: list[Poll] = []
    # While the first runner fetches article 2, a second runner polls the list from
    # start to end; the first then finds the watermark moved and stops.
    news.before_article = lambda n: inner.append(
        poll(site.mlist(), FakeNews(news.groups), other, gate.clock())
    )
    outer = gate.poll()
    other.close()
    assert inner[0].gated == 3
    assert outer.gated == 0 and "another runner" in outer.stopped
    assert sorted(subjects(site)) == sorted(set(subjects(site)))
    assert len(subjects(site)) == 3
    assert watermark(site.sessions, site) == 4


def test_the_lists_own_posts_coming_back_and_malformed_articles_are_skipped(
    site: Site, news: FakeNews, gate: Gate, caplog: pytest.LogCaptureFixture
) -> None:
    gate.started()
    news.add(GROUP, article(1, extra=f"List-Id: Team <{site.list_id}>\r\n"))
    news.add(GROUP, b"this is not a header\r\nFrom: x@example.com\r\n\r\nbody\r\n")
    news.add(GROUP, article(3, extra="X-BeenThere: other@list.example\r\n"))
    with caplog.at_level(logging.INFO, logger="mtaplugin.frontends.news"):
        result = gate.poll()
    assert (result.gated, result.skipped) == (1, 2)
    assert subjects(site) == ["[Team] article 3"]
    assert "malformed header section" in caplog.text
    assert "came from the list itself" in caplog.text
    assert watermark(site.sessions, site) == 4


def test_a_missing_group_or_refused_credentials_leave_the_watermark(
    site: Site, news: FakeNews, gate: Gate, caplog: pytest.LogCaptureFixture
) -> None:
    gate.started()
    news.add(GROUP, article(1))
    news.group_error = NewsError("481 authentication failed", temporary=False)
    with caplog.at_level(logging.ERROR, logger="mtaplugin.frontends.news"):
        refused = gate.poll()
    assert refused.gated == 0 and "481" in refused.stopped
    assert "481 authentication failed" in caplog.text
    site.update(linked_newsgroup="local.nosuch")
    missing = gate.poll()
    assert missing.gated == 0 and "no such group" in missing.stopped
    site.update(linked_newsgroup=GROUP)
    assert watermark(site.sessions, site) == 1
    assert gate.poll().gated == 1


def test_a_temporary_error_stops_the_list_until_next_time(
    site: Site, news: FakeNews, gate: Gate
) -> None:
    gate.started(then=3)
    news.article_errors[4] = NewsError("400 service unavailable", temporary=True)
    first = gate.poll()
    assert first.gated == 2 and "400" in first.stopped
    assert watermark(site.sessions, site) == 3
    second = gate.poll()
    assert (second.gated, second.stopped) == (1, "")
    assert len(subjects(site)) == 3


def test_a_list_that_does_not_gate_is_left_alone(
    site: Site, gate_engine: ListEngine, clock: ManualClock
) -> None:
    news = FakeNews({GROUP: {1: article(1)}})
    result = poll(site.mlist(), news, gate_engine, clock())
    assert result.stopped and news.sessions == 0


def test_the_job_is_registered() -> None:
    assert NEWS_GATE in JOBS


def test_inspect_rewrites_to_and_drops_trace_headers(site: Site) -> None:
    mlist = site.mlist()
    found = inspect(article(1), mlist)
    assert not isinstance(found, Skip)
    msg = email.message_from_bytes(found)
    assert msg["To"] == site.address and msg["X-Originally-To"] == "someone@else.example"
    assert msg["Path"] is None and msg["Newsgroups"] == GROUP
    assert inspect(b"From: a@b.example\r\nSubject: x\r\n\r\n", mlist) != Skip(
        "malformed header section", True
    )
    assert isinstance(inspect(b"Subject: no from\r\n\r\nbody\r\n", mlist), Skip)
    assert isinstance(inspect(b"", mlist), Skip)


def test_a_moderated_group_holds_mail_posts_but_not_the_groups_own_articles(
    site: Site, news: FakeNews, gate: Gate
) -> None:
    gate.started()
    site.update(gateway_to_news=True, newsgroup_moderation=NewsgroupModeration.moderated)
    # A post by mail waits for the moderators (news-moderation) ...
    post = b"From: anne@example.com\r\nTo: " + site.address.encode() + b"\r\n"
    post += b"Subject: by mail\r\nMessage-ID: <m1@example.com>\r\n\r\nhello\r\n"
    gate.engine.decide(Envelope("anne@example.com", [site.address]), post, in_place=False)
    [held] = site.held()
    assert [r[0] for r in held.reasons] == ["news-moderation"]
    # ... an article of the (moderated) group went through its moderation already.
    news.add(GROUP, article(1))
    assert gate.poll().gated == 1
    assert subjects(site) == ["[Team] article 1"]
    assert len(site.held()) == 1


def test_two_runners_in_threads_at_the_same_moment_gate_each_article_once(
    site: Site, news: FakeNews, gate: Gate
) -> None:
    gate.started(then=3)
    barrier = threading.Barrier(2, timeout=10)
    results: list[Poll] = []

    def runner() -> None:
        engine = ListEngine(site.sessions, clock=gate.clock)
        server = FakeNews(news.groups)
        # Both have read the watermark before either fetches its first article.
        server.before_article = lambda n: barrier.wait()
        try:
            results.append(poll(site.mlist(), server, engine, gate.clock()))
        finally:
            engine.close()

    threads = [threading.Thread(target=runner) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 2
    # One runner gates, the other finds the watermark moved (or, on SQLite, the database
    # locked: a temporary failure) and stops; nothing is gated twice.
    assert sum(r.gated for r in results) + gate.poll().gated == 3
    assert sorted(subjects(site)) == [f"[Team] article {n}" for n in (1, 2, 3)]
    assert watermark(site.sessions, site) == 4


@pytest.fixture
def connected(site: Site, monkeypatch: pytest.MonkeyPatch) -> tuple[str, FakeNews]:
    """A group of its own, with one article, that the list gates; the job's connection to
    the news server is the in-memory server holding it."""
    group = unique("local.job")
    site.update(gateway_to_mail=True, linked_newsgroup=group)
    server = FakeNews({group: {1: article(0)}})
    monkeypatch.setattr("mtaplugin.frontends.news.connect", lambda settings: server)
    return group, server


def test_the_job_gates_every_gating_list_and_counts_the_posts(
    site: Site, clock: ManualClock, connected: tuple[str, FakeNews]
) -> None:
    group, server = connected
    world = wiring.build(
        Settings(nntp=NntpSettings(host="news.invalid")), db=engine_of(site.sessions), clock=clock
    )

    def run() -> int:
        outcome = Runner(world, [NEWS_GATE]).run_now(NEWS_GATE.name)
        assert not outcome.error and outcome.result is not None
        return outcome.result

    assert run() == 0  # the first poll
    server.add(group, article(1))
    assert run() == 1
    assert run() == 0
    assert subjects(site) == ["[Team] article 1"]
    assert site.mlist().last_post_at is not None


@pytest.mark.usefixtures("connected")
def test_the_job_does_nothing_without_a_news_server(site: Site, clock: ManualClock) -> None:
    world = wiring.build(Settings(), db=engine_of(site.sessions), clock=clock)
    outcome = Runner(world, [NEWS_GATE]).run_now(NEWS_GATE.name)
    assert not outcome.error and outcome.result == 0
    assert watermark(site.sessions, site) is None  # never polled: nntp.host is empty


def test_a_new_linked_group_starts_over_at_its_end(site: Site, news: FakeNews, gate: Gate) -> None:
    gate.started()
    news.groups["local.other"] = {5: article(5), 6: article(6)}
    site.update(linked_newsgroup="local.other")
    moved = gate.poll()
    assert moved.started and moved.gated == 0
    assert watermark(site.sessions, site) == 6
    news.groups["local.other"][7] = article(7)
    assert gate.poll().gated == 1
    assert subjects(site) == ["[Team] article 7"]
