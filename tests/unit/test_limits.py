"""The guard-rails of ``[rules]``: per-sender and per-list posting rates (4xx) and
nonmembers refused on large lists (5xx), decided at end of message by the real engine on
SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import ManualClock
from mtaplugin.engine import ListEngine, rates
from mtaplugin.model import PostRate
from mtaplugin.posting.rules.base import SitePolicy
from mtaplugin.posting.verdict import Accept, Discard, Reject, TempFail
from mtaplugin.vocabulary.job import JobContext
from tests.helpers import envelope, make_post, unique
from tests.unit.sites import Roster, Site, make_site


def people(n: int) -> tuple[str, ...]:
    """``n`` addresses no other test uses (the sender counts are site-wide)."""
    return tuple(f"{unique('p')}@example.com" for _ in range(n))


def engine_for(sessions: sessionmaker[Session], clock: ManualClock, **policy: int) -> ListEngine:
    return ListEngine(
        sessions, site_owner="postmaster@site.test", site_policy=SitePolicy(**policy), clock=clock
    )


def post(engine: ListEngine, site: Site, sender: str, list_name: str = "team"):
    to = site.addr(list_name)
    return engine.decide(envelope(to, mail_from=sender), make_post(sender, to))


def rows(sessions: sessionmaker[Session], key: str) -> list[PostRate]:
    with sessions() as s:
        found = list(s.scalars(select(PostRate).where(PostRate.key == key)))
        s.expunge_all()
        return found


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 2, 9, 3, tzinfo=UTC))


def test_a_sender_over_the_hourly_limit_is_told_to_try_later_across_lists(
    module_sessions: sessionmaker[Session], module_db_url: str, clock: ManualClock
):
    anne, bob = people(2)
    one = make_site(module_sessions, Roster.members(anne, bob), url=module_db_url)
    two = make_site(module_sessions, Roster.members(anne), url=module_db_url)
    engine = engine_for(module_sessions, clock, sender_posts_per_hour=3)
    assert isinstance(post(engine, one, anne), Accept)
    clock.advance(minutes=20)
    assert isinstance(post(engine, two, anne), Accept)
    assert isinstance(post(engine, one, anne), Accept)
    # The fourth post in the hour, to either list: 451 4.7.1 naming the rule.
    verdict = post(engine, two, anne)
    assert isinstance(verdict, TempFail)
    assert (verdict.reply.code, verdict.reply.enhanced) == (451, "4.7.1")
    assert "sender-rate" in verdict.reply.text
    assert anne in verdict.reply.text and "3" in verdict.reply.text
    # Another sender on the same list is not held back.
    assert isinstance(post(engine, one, bob), Accept)
    # The deferred post was not counted; once the first window has aged out of the hour
    # (60 minutes after 09:00-09:10), anne may post again.
    assert sum(r.posts for r in rows(module_sessions, rates.sender_key(anne))) == 3
    clock.advance(minutes=38)  # 10:01: the 09:00 window no longer counts
    assert isinstance(post(engine, one, anne), Accept)


def test_a_list_over_its_hourly_limit_defers_every_sender(
    module_sessions: sessionmaker[Session], module_db_url: str, clock: ManualClock
):
    anne, bob = people(2)
    site = make_site(module_sessions, Roster.members(anne, bob), url=module_db_url)
    engine = engine_for(module_sessions, clock, list_posts_per_hour=2)
    assert isinstance(post(engine, site, anne), Accept)
    # A nonmember's post is held: a held post counts too.
    assert isinstance(post(engine, site, f"{unique('x')}@elsewhere.test"), Discard)
    assert len(site.held()) == 1
    verdict = post(engine, site, bob)
    assert isinstance(verdict, TempFail)
    assert verdict.reply.enhanced == "4.7.1"
    assert "list-rate" in verdict.reply.text
    assert site.address in verdict.reply.text
    # Nothing was stored for the deferred post.
    assert len(site.held()) == 1
    clock.advance(hours=1)
    assert isinstance(post(engine, site, bob), Accept)


def test_a_list_may_word_its_own_rate_refusal(
    module_sessions: sessionmaker[Session], module_db_url: str, clock: ManualClock
):
    (anne,) = people(1)
    site = make_site(module_sessions, Roster.members(anne), url=module_db_url)
    with module_sessions.begin() as s:
        from mtaplugin.manage import lists

        lists.get(s, site.address).refusal_texts = {"list-rate": "Slow down, {list} is busy"}
    engine = engine_for(module_sessions, clock, list_posts_per_hour=1)
    assert isinstance(post(engine, site, anne), Accept)
    verdict = post(engine, site, anne)
    assert isinstance(verdict, TempFail)
    assert verdict.reply.text.startswith(f"Slow down, {site.address} is busy")
    assert "list-rate" in verdict.reply.text


def test_nonmembers_are_refused_on_a_list_above_the_size(
    module_sessions: sessionmaker[Session], module_db_url: str, clock: ManualClock
):
    anne, bob = people(2)
    site = make_site(module_sessions, Roster.members(anne, bob), url=module_db_url)
    stranger = f"{unique('x')}@elsewhere.test"
    strict = engine_for(module_sessions, clock, nonmember_posts_max_members=1)
    verdict = post(strict, site, stranger)
    assert isinstance(verdict, Reject)
    assert (verdict.reply.code, verdict.reply.enhanced) == (550, "5.7.1")
    assert "nonmember-large-list" in verdict.reply.text
    assert "2 members" in verdict.reply.text
    assert site.held() == []
    # Members still post; at the list's own size the rule lets the nonmember through to
    # the usual nonmember moderation (held).
    assert isinstance(post(strict, site, anne), Accept)
    roomy = engine_for(module_sessions, clock, nonmember_posts_max_members=2)
    assert isinstance(post(roomy, site, stranger), Discard)
    assert len(site.held()) == 1


def test_a_nonmember_whose_action_is_accept_may_post_to_a_large_list(
    module_sessions: sessionmaker[Session], module_db_url: str, clock: ManualClock
):
    anne, bob = people(2)
    friend = f"{unique('friend')}@elsewhere.test"
    site = make_site(module_sessions, Roster.members(anne, bob), url=module_db_url)
    with module_sessions.begin() as s:
        from mtaplugin.enums import Action, MemberRole
        from mtaplugin.manage import lists, members

        m = members.add(s, lists.get(s, site.address), friend, MemberRole.nonmember)
        m.moderation_action = Action.accept
    engine = engine_for(module_sessions, clock, nonmember_posts_max_members=1)
    assert isinstance(post(engine, site, friend), Accept)


def test_nothing_is_counted_when_no_limit_is_on(
    module_sessions: sessionmaker[Session], module_db_url: str, clock: ManualClock
):
    (anne,) = people(1)
    site = make_site(module_sessions, Roster.members(anne), url=module_db_url)
    engine = engine_for(module_sessions, clock)
    for _ in range(3):
        assert isinstance(post(engine, site, anne), Accept)
    assert rows(module_sessions, rates.sender_key(anne)) == []
    assert rows(module_sessions, rates.list_key(site.list_id)) == []


def test_a_refused_post_does_not_use_up_the_hour(
    module_sessions: sessionmaker[Session], module_db_url: str, clock: ManualClock
):
    (anne,) = people(1)
    site = make_site(module_sessions, Roster.members(anne), url=module_db_url)
    stranger = f"{unique('x')}@elsewhere.test"
    engine = engine_for(
        module_sessions, clock, sender_posts_per_hour=1, nonmember_posts_max_members=0
    )
    with module_sessions.begin() as s:
        from mtaplugin.enums import Action
        from mtaplugin.manage import lists

        lists.get(s, site.address).default_nonmember_action = Action.reject
    assert isinstance(post(engine, site, stranger), Reject)
    assert rows(module_sessions, rates.sender_key(stranger)) == []


def test_windows_and_pruning(module_sessions: sessionmaker[Session], clock: ManualClock):
    assert rates.window_of(datetime(2026, 3, 2, 9, 59, 59, tzinfo=UTC)) == datetime(
        2026, 3, 2, 9, 50, tzinfo=UTC
    )
    key = rates.sender_key(f"{unique('old')}@example.com")
    with module_sessions.begin() as s:
        conn = s.connection()
        rates.count(conn, [key], clock() - timedelta(hours=3))
        rates.count(conn, [key], clock())
        rates.count(conn, [key, key], clock())  # one key twice in one post: counted once
    with module_sessions.begin() as s:
        assert rates.last_hour(s.connection(), [key], clock()) == {key: 2}
    ctx = JobContext(SimpleNamespace(sessions=module_sessions), clock())  # type: ignore[arg-type]
    assert rates.prune(ctx) >= 1
    assert [(r.window_start, r.posts) for r in rows(module_sessions, key)] == [
        (rates.window_of(clock()), 2)
    ]
