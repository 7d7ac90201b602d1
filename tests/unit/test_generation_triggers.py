"""Which changes to a list's members move its ``generation`` (migrations 0002, 0005, 0048).

The generation tells every process that keeps a snapshot of the list to read it again.
Any change to what a snapshot reads moves it; a poster recorded on the nonmember roster
with no action of their own, and a member's bounce bookkeeping, do not (on SQLite and
PostgreSQL): on a list that gets spam and bounces they made every decision reload the
list."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, inspect, select, text

from mtaplugin.api.counts import member_counts
from mtaplugin.engine import ListEngine
from mtaplugin.enums import MemberRole
from mtaplugin.manage import lists, members, nonmembers
from mtaplugin.model import Address, MailingList, Member
from mtaplugin.posting.verdict import Accept, Accepted, Held, TempFail, Verdict
from tests.helpers import envelope, make_post
from tests.unit.sites import Site

#: the columns of ``members`` no snapshot reads (migration 0048)
BOOKKEEPING = {"bounce_score", "last_bounce_received", "last_warning_sent", "total_warnings_sent"}


def generation(site: Site) -> int:
    with site.sessions() as s:
        return s.scalars(
            select(MailingList.generation).where(MailingList.id == site.mlist().id)
        ).one()


def execute(site: Site, sql: str, **params: object) -> None:
    with site.sessions.begin() as s:
        s.execute(text(sql), params)


def post(engine: ListEngine, site: Site, sender: str) -> Verdict:
    return engine.decide(envelope(site.address), make_post(sender, site.address))


def nonmember_emails(site: Site) -> list[str]:
    with site.sessions() as s:
        return list(
            s.scalars(
                select(Address.email)
                .join(Member, Member.address_id == Address.id)
                .where(
                    Member.mailing_list_id == site.mlist().id,
                    Member.role == MemberRole.nonmember,
                )
            )
        )


def outcome(engine: ListEngine, site: Site, sender: str) -> type:
    """What the list decided on ``sender``'s post."""
    verdict = post(engine, site, sender)
    assert not isinstance(verdict, TempFail), verdict
    (decided,) = verdict.outcomes
    return type(decided)


def test_a_nonmember_recorded_with_no_action_keeps_the_generation(
    engine: ListEngine, site: Site
) -> None:
    assert outcome(engine, site, "anne@example.com") is Accepted
    before, loads = generation(site), engine.snapshots.loads
    assert outcome(engine, site, "spammer@example.net") is Held
    # The poster is on the nonmember roster ...
    assert nonmember_emails(site) == ["spammer@example.net"]
    # ... and the list was not read again, now or at the next post.
    assert generation(site) == before
    assert outcome(engine, site, "anne@example.com") is Accepted
    assert outcome(engine, site, "spammer@example.net") is Held
    assert engine.snapshots.loads == loads
    # An action of their own is a change the decision reads: it moves, and reaches it.
    execute(
        site,
        "UPDATE members SET moderation_action = 'accept' WHERE role = 'nonmember' "
        "AND mailing_list_id = :pk",
        pk=site.mlist().id,
    )
    assert generation(site) == before + 1
    assert outcome(engine, site, "spammer@example.net") is Accepted


def test_a_nonmember_recorded_with_an_action_or_a_member_moves_it(site: Site) -> None:
    pk = site.mlist().id
    before = generation(site)
    execute(
        site,
        "INSERT INTO members (member_id, mailing_list_id, role, address_id, subscription_mode,"
        " display_name, moderation_action, bounce_score, total_warnings_sent, topics,"
        " receive_nonmatching_topics, created_at) SELECT 'x' || :pk, :pk, 'nonmember', id,"
        " 'as_address', '', 'discard', 0, 0, '[]', false, CURRENT_TIMESTAMP FROM addresses"
        " WHERE email = 'anne@example.com'",
        pk=pk,
    )
    assert generation(site) == before + 1
    with site.sessions.begin() as s:
        nonmembers.record_nonmember(s, pk, "quiet@example.net", site.mlist().created_at)
    assert generation(site) == before + 1
    with site.sessions.begin() as s:
        members.add(s, lists.get(s, site.address), "new@example.com")
    assert generation(site) == before + 2


def test_bounce_bookkeeping_keeps_it_and_a_delivery_status_moves_it(
    engine: ListEngine, site: Site
) -> None:
    first = post(engine, site, "anne@example.com")
    assert isinstance(first, Accept)
    assert first.edits.add_recipients == ("anne@example.com", "bob@example.com")
    before = generation(site)
    bob = "(SELECT id FROM addresses WHERE email = 'bob@example.com')"
    execute(
        site,
        "UPDATE members SET bounce_score = 3, last_bounce_received = CURRENT_TIMESTAMP,"
        f" last_warning_sent = CURRENT_TIMESTAMP, total_warnings_sent = 1 WHERE address_id = {bob}",
    )
    assert generation(site) == before
    execute(site, f"UPDATE members SET delivery_status = 'by_bounces' WHERE address_id = {bob}")
    assert generation(site) == before + 1
    verdict = post(engine, site, "anne@example.com")
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("anne@example.com",)


@pytest.mark.parametrize(
    "assignment",
    [
        "display_name = 'Bob B.'",
        "moderation_action = 'hold'",
        "receive_list_copy = false",
        "delivery_mode = 'mime_digests'",
        "topics = '[\"news\"]'",
        "receive_nonmatching_topics = true",
        "acknowledge_posts = true",
        "role = 'moderator'",
        # with a bookkeeping column: the other one moves it
        "bounce_score = 9, receive_own_postings = false",
    ],
)
def test_any_other_change_of_a_member_moves_it(site: Site, assignment: str) -> None:
    before = generation(site)
    execute(
        site,
        f"UPDATE members SET {assignment} WHERE mailing_list_id = :pk "
        "AND address_id = (SELECT id FROM addresses WHERE email = 'bob@example.com')",
        pk=site.mlist().id,
    )
    assert generation(site) == before + 1


def test_the_update_trigger_names_every_column_but_the_bookkeeping(sqlite_url: str) -> None:
    """A column added to ``members`` later must be covered by the trigger made again: this
    fails until it is (on PostgreSQL the row is compared whole, less the bookkeeping)."""
    engine = create_engine(sqlite_url)
    try:
        with engine.connect() as conn:
            sql = conn.execute(
                text("SELECT sql FROM sqlite_master WHERE name = 'trg_gen_members_upd'")
            ).scalar_one()
            columns = {c["name"] for c in inspect(conn).get_columns("members")}
    finally:
        engine.dispose()
    named = {c for c in columns if f'NEW."{c}" IS NOT OLD."{c}"' in sql}
    assert named == columns - BOOKKEEPING
    assert columns >= BOOKKEEPING  # (a renamed one would be missed)


def test_the_nonmember_count_is_taken_again(site: Site) -> None:
    pk = site.mlist().id
    with site.sessions() as s:
        gen = generation(site)
        assert member_counts(s, [(pk, gen)], MemberRole.nonmember) == {pk: 0}
    with site.sessions.begin() as s:
        nonmembers.record_nonmember(s, pk, "quiet@example.net", site.mlist().created_at)
    assert generation(site) == gen
    with site.sessions() as s:
        assert member_counts(s, [(pk, gen)], MemberRole.nonmember) == {pk: 1}
