"""A permanent refusal met by the outbox becomes the member's bounce event
(mtaplugin.bounces.refused), committed with the row's update; on the in-memory MTA."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.enums import BounceContext, BounceKind, OutboxStatus
from mtaplugin.manage import domains, lists
from mtaplugin.model import BounceEvent
from tests.helpers import unique
from tests.unit.outbox.util import FakeOutbox, enqueue, row, set_lease


def a_list(sessions: sessionmaker[Session]) -> int:
    host = f"{unique('refusals')}.test"
    with sessions.begin() as s:
        domains.create(s, host)
        return lists.create(s, f"team@{host}").id


def events(sessions: sessionmaker[Session]) -> list[BounceEvent]:
    with sessions() as s:
        found = list(s.scalars(select(BounceEvent).order_by(BounceEvent.id)))
        s.expunge_all()
        return found


@pytest.fixture
def pk(box: FakeOutbox) -> int:
    """A new list's primary key, with no bounce event recorded anywhere yet."""
    with box.sessions.begin() as s:
        s.execute(delete(BounceEvent))
    return a_list(box.sessions)


def test_refused_members_of_a_list_copy_get_bounce_events(box: FakeOutbox, pk: int) -> None:
    sessions, fake, deliver_fake, clock = box
    fake.refuse = {
        "gone@example.com": "550 5.1.1 <gone@example.com>: Recipient address rejected",
        "blocked@example.com": "554 5.7.1 Service unavailable; client host blocked",
        "full@example.com": "552 5.2.2 Mailbox full",
        "later@example.com": "451 4.3.0 try later",
    }
    people = ["anne@example.com", "Gone@Example.com", "blocked@example.com"]
    people += ["full@example.com", "later@example.com"]
    rid = enqueue(sessions, people, now=clock(), kind="post", mailing_list_id=pk)
    deliver_fake().run()
    r = row(sessions, rid)
    assert r.recipients == ["later@example.com"]  # deferred: no event
    found = {e.email: e for e in events(sessions)}
    assert set(found) == {"gone@example.com", "blocked@example.com", "full@example.com"}
    gone = found["gone@example.com"]
    assert (gone.kind, gone.status, gone.context, gone.processed) == (
        BounceKind.hard,
        "5.1.1",
        BounceContext.normal,
        False,
    )
    assert gone.mailing_list_id == pk
    assert gone.at == clock()
    assert "Recipient address rejected" in gone.diagnostic
    assert gone.message_id.startswith("<") and gone.message_id.endswith("@client.test>")
    assert found["blocked@example.com"].kind is BounceKind.policy
    assert found["full@example.com"].kind is BounceKind.delayed
    # the next attempt does not record them again
    clock.advance(hours=1)
    fake.refuse.pop("later@example.com")
    deliver_fake().run()
    assert row(sessions, rid).status is OutboxStatus.sent
    assert len(events(sessions)) == 3


def test_refusals_in_every_chunk_are_recorded_once(box: FakeOutbox, pk: int) -> None:
    sessions, fake, deliver_fake, clock = box
    people = [f"m{i}@example.com" for i in range(7)]
    fake.refuse = {p: "550 5.1.1 no such user" for p in people[::2]}
    enqueue(sessions, people, now=clock(), kind="post", mailing_list_id=pk)
    deliver_fake(max_recipients=2).run()
    assert sorted(e.email for e in events(sessions)) == sorted(people[::2])


def test_notices_and_rows_of_no_list_record_nothing(box: FakeOutbox, pk: int) -> None:
    sessions, fake, deliver_fake, clock = box
    fake.refuse = {"gone@example.com": "550 5.1.1 no such user"}
    enqueue(sessions, ["gone@example.com"], now=clock(), kind="notice", mailing_list_id=pk)
    enqueue(sessions, ["gone@example.com"], now=clock(), kind="post")
    result = deliver_fake().run()
    assert result.failed == 2
    assert events(sessions) == []


def test_a_pass_that_lost_its_lease_records_no_event_and_the_next_records_one(
    box: FakeOutbox, pk: int
) -> None:
    sessions, fake, deliver_fake, clock = box
    people = ["gone@example.com", "ok1@example.com", "ok2@example.com"]
    fake.refuse = {"gone@example.com": "550 5.1.1 no such user"}
    rid = enqueue(sessions, people, now=clock(), kind="post", mailing_list_id=pk)
    # after the first chunk another worker took the row: the commit that would take
    # gone@ off the row, with its event, is not made
    fake.after_send = lambda n: set_lease(sessions, rid, "thief:1:abc", clock(), 3600)
    deliver_fake(max_recipients=2).run()
    assert row(sessions, rid).recipients == people
    assert events(sessions) == []
    # the lease runs out; the next pass meets the refusal again and records it once
    fake.after_send = None
    set_lease(sessions, rid, "thief:1:abc", clock(), -1)
    deliver_fake(max_recipients=2).run()
    assert row(sessions, rid).status is OutboxStatus.sent
    assert [e.email for e in events(sessions)] == ["gone@example.com"]


def test_digest_and_released_post_members_refused_for_good_get_bounce_events(
    box: FakeOutbox, pk: int
) -> None:
    """A digest and a released hold go to the list's members as a post does: a member
    refused for good is scored the same way, whichever copy met the refusal."""
    sessions, fake, deliver_fake, clock = box
    fake.refuse = {
        "digest@example.com": "550 5.1.1 no such user",
        "released@example.com": "550 5.1.1 no such user",
    }
    enqueue(sessions, ["digest@example.com"], now=clock(), kind="digest", mailing_list_id=pk)
    enqueue(sessions, ["released@example.com"], now=clock(), kind="release", mailing_list_id=pk)
    deliver_fake().run()
    assert sorted(e.email for e in events(sessions)) == [
        "digest@example.com",
        "released@example.com",
    ]
