"""A held post's notices are made by the worker after the answer
(:mod:`mtaplugin.manage.hold_notices`): the decision stores the post with
``notices_due``; a batch makes the moderators' notice (with its token) and the poster's,
clears the flag, all in one transaction, exactly once."""

from __future__ import annotations

import threading
import time
from email import message_from_bytes, policy

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import outbox
from mtaplugin.engine import ListEngine
from mtaplugin.enums import RequestType
from mtaplugin.mailauth.identity import AuthenticationPolicy
from mtaplugin.manage import held, hold_notices, lists
from mtaplugin.manage.hold_notices import NoticePolicy
from mtaplugin.model import HeldMessage, OutboxMessage, PendingRequest
from mtaplugin.posting.verdict import Discard
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import make_post, send_hold_notices
from tests.unit.sites import Roster, make_site

STAFF = ["mod@example.com", "olive@example.com"]


def hold(
    sessions: sessionmaker[Session],
    address: str,
    sender: str,
    auth_user: str = "",
    site_owner: str = "",
) -> int:
    engine = ListEngine(
        sessions,
        auth_policy=AuthenticationPolicy(trust_sasl_senders=True),
        site_owner=site_owner,
    )
    env = Envelope(mail_from=sender, recipients=[f"<{address}>"], auth_user=auth_user)
    verdict = engine.decide(env, make_post(sender, address, subject="please hold"))
    assert isinstance(verdict, Discard)
    (held_id,) = verdict.stored.held.values()
    return held_id


def notices_of(sessions: sessionmaker[Session], address: str) -> list[OutboxMessage]:
    with sessions() as s:
        mlist = lists.get(s, address)
        query = (
            select(OutboxMessage)
            .where(OutboxMessage.mailing_list_id == mlist.id, OutboxMessage.kind == "notice")
            .order_by(OutboxMessage.id)
        )
        return list(s.scalars(query))


def due(sessions: sessionmaker[Session], held_id: int) -> bool:
    with sessions() as s:
        row = s.get(HeldMessage, held_id)
        assert row is not None
        return row.notices_due


def tokens(sessions: sessionmaker[Session], held_id: int) -> int:
    with sessions() as s:
        query = select(func.count(PendingRequest.id)).where(
            PendingRequest.held_message_id == held_id,
            PendingRequest.request_type == RequestType.held_message,
        )
        return int(s.scalar(query) or 0)


def test_the_answer_queues_nothing_and_the_worker_queues_the_notice_once(sessions):
    site = make_site(sessions)
    held_id = hold(sessions, site.address, "stranger@example.net")
    # Answered: the post is held, its notice not made yet.
    assert due(sessions, held_id)
    assert notices_of(sessions, site.address) == [] and tokens(sessions, held_id) == 0
    with sessions() as s:
        assert hold_notices.waiting(s) == 1

    assert send_hold_notices(sessions) == 1
    (row,) = notices_of(sessions, site.address)
    assert sorted(row.recipients) == STAFF
    notice = message_from_bytes(row.raw, policy=policy.default)
    assert "requires approval" in str(notice["Subject"])
    # The moderators' token is in the Reply-To, and it is the one stored for the post.
    with sessions() as s:
        (token,) = s.scalars(
            select(PendingRequest.token).where(PendingRequest.held_message_id == held_id)
        )
    assert f"+{token}@" in str(notice["Reply-To"])
    assert not due(sessions, held_id)

    # Exactly once: a second pass finds nothing.
    assert send_hold_notices(sessions) == 0
    assert len(notices_of(sessions, site.address)) == 1 and tokens(sessions, held_id) == 1


def test_a_list_that_sends_no_notice_stores_no_flag(sessions):
    site = make_site(sessions)
    with sessions.begin() as s:
        lists.get(s, site.address).admin_immed_notify = False
    held_id = hold(sessions, site.address, "stranger@example.net")
    assert not due(sessions, held_id)  # unauthenticated poster, no moderators' notice
    assert send_hold_notices(sessions) == 0
    assert notices_of(sessions, site.address) == []


def test_a_list_with_no_staff_tells_the_site_owner(sessions):
    site = make_site(sessions, Roster.members("anne@example.com"))
    # (the engine and the worker read the same [site] site_owner)
    quiet = hold(sessions, site.address, "stranger@example.net")
    assert not due(sessions, quiet)  # nobody to tell
    held_id = hold(sessions, site.address, "stranger@example.net", site_owner="owner@site.test")
    assert due(sessions, held_id)
    assert send_hold_notices(sessions, site_owner="owner@site.test") == 1
    (row,) = notices_of(sessions, site.address)
    assert row.recipients == ["owner@site.test"]
    assert not due(sessions, held_id)


def test_the_authenticated_poster_is_told_once_a_day(sessions):
    site = make_site(sessions)
    with sessions.begin() as s:
        lists.get(s, site.address).admin_immed_notify = False
    # SASL-authenticated nonmember: told; twice in a day: told once (the daily budget).
    first = hold(sessions, site.address, "carl@example.net", auth_user="carl@example.net")
    second = hold(sessions, site.address, "carl@example.net", auth_user="carl@example.net")
    stranger = hold(sessions, site.address, "dora@example.net")
    assert due(sessions, first) and due(sessions, second) and not due(sessions, stranger)
    assert send_hold_notices(sessions) == 2
    (row,) = notices_of(sessions, site.address)
    assert row.recipients == ["carl@example.net"]
    assert "please hold" in message_from_bytes(row.raw, policy=policy.default).as_string()
    assert not due(sessions, first) and not due(sessions, second)


def test_a_post_released_before_its_turn_is_told_to_nobody(sessions):
    site = make_site(sessions)
    held_id = hold(sessions, site.address, "stranger@example.net")
    with sessions.begin() as s:
        mlist = lists.get(s, site.address)
        held.discard(held.Moderator(s, mlist, "mod@example.com"), held_id)
    assert send_hold_notices(sessions) == 0
    assert notices_of(sessions, site.address) == []


def test_a_batch_that_fails_keeps_the_flag_and_makes_nothing(sessions, monkeypatch):
    """The second post's notice fails to be queued, after the first post was taken, its
    token stored and its notice queued, in the same transaction: all of it is undone."""
    site = make_site(sessions)
    first = hold(sessions, site.address, "stranger@example.net")
    second = hold(sessions, site.address, "other@example.net")
    queued: list[list[str]] = []

    def broken(session, mlist, recipients, raw, now, mail_from=""):
        queued.append(list(recipients))
        if len(queued) == 2:
            raise RuntimeError("the outbox failed")
        return real(session, mlist, recipients, raw, now, mail_from)

    real = outbox.list_notice
    monkeypatch.setattr(outbox, "list_notice", broken)
    with pytest.raises(RuntimeError):
        # one batch, whatever the machine's speed (the budget only cuts a batch short)
        hold_notices.send_batch(sessions, NoticePolicy(), budget=600)
    assert len(queued) == 2
    # The batch rolled back: the first post's flag, token and notice went with it.
    assert notices_of(sessions, site.address) == []
    assert due(sessions, first) and due(sessions, second)
    assert tokens(sessions, first) == 0 and tokens(sessions, second) == 0
    monkeypatch.setattr(outbox, "list_notice", real)
    assert send_hold_notices(sessions) == 2
    assert len(notices_of(sessions, site.address)) == 2
    assert tokens(sessions, first) == 1 and tokens(sessions, second) == 1


def test_the_worker_thread_queues_the_notice_a_moment_after_the_answer(sessions):
    site = make_site(sessions)
    stop = threading.Event()
    worker = threading.Thread(
        target=hold_notices.keep_sending, args=(sessions, NoticePolicy(), stop), daemon=True
    )
    worker.start()
    try:
        held_id = hold(sessions, site.address, "stranger@example.net")
        deadline = time.monotonic() + 30
        while due(sessions, held_id) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        worker.join(10)
    assert not worker.is_alive()
    assert not due(sessions, held_id)
    (row,) = notices_of(sessions, site.address)
    assert sorted(row.recipients) == STAFF


def test_a_post_another_worker_took_meanwhile_is_skipped(sessions):
    site = make_site(sessions)
    held_id = hold(sessions, site.address, "stranger@example.net")
    with sessions.begin() as s:
        stale = s.get(HeldMessage, held_id)
        assert stale is not None and stale.notices_due
        with sessions.begin() as other:  # another worker takes it, after this one read it
            taken = other.get(HeldMessage, held_id)
            assert taken is not None
            taken.notices_due = False
        assert not hold_notices.send(s, stale, NoticePolicy())
    assert notices_of(sessions, site.address) == [] and tokens(sessions, held_id) == 0
