"""mtaplugin.engine.ListEngine: the answers at RCPT and at end of message, with what they store."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, text

from mtaplugin.clock import ManualClock
from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.engine import ListEngine, decide
from mtaplugin.engine.recipients import Target
from mtaplugin.enums import Action, MemberRole
from mtaplugin.mailauth.identity import AuthenticationPolicy
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import Address, BounceEvent
from mtaplugin.posting.rules.moderation import NONMEMBER_MODERATION
from mtaplugin.posting.verdict import (
    Accept,
    Accepted,
    Deferred,
    Discard,
    Dropped,
    Held,
    Refused,
    Reject,
    TempFail,
    temporary,
)
from mtaplugin.testing import free_port
from mtaplugin.vocabulary.addresses import Subaddress
from tests.helpers import envelope, make_post
from tests.unit.sites import Site


# --- RCPT ---------------------------------------------------------------------------------
def test_list_address_is_accepted(engine: ListEngine, site: Site):
    check = engine.check_recipient(f"<{site.addr('Team')}>")
    assert check.reply is None
    assert check.list_id == f"team.{site.host}"
    assert check.subaddress is Subaddress.posting
    assert check.is_list


def test_owner_and_bounces_addresses_are_accepted(engine: ListEngine, site: Site):
    owner = engine.check_recipient(f"<{site.addr('team-owner')}>")
    assert (owner.reply, owner.list_id, owner.subaddress) == (
        None,
        f"team.{site.host}",
        Subaddress.owner,
    )
    bounces = engine.check_recipient(site.addr("team-bounces+anne=example.com"))
    assert (bounces.reply, bounces.subaddress) == (None, Subaddress.bounces)


def test_unknown_list_in_a_list_domain_is_refused(engine: ListEngine, site: Site):
    check = engine.check_recipient(f"<{site.addr('nosuch')}>")
    assert check.reply is not None
    assert (check.reply.code, check.reply.enhanced) == (550, "5.1.1")
    assert site.addr("nosuch") in check.reply.text
    assert site.host in check.reply.text
    assert not check.is_list


def test_unknown_subaddress_of_unknown_list_is_refused(engine: ListEngine, site: Site):
    check = engine.check_recipient(site.addr("nosuch-owner"))
    assert check.reply is not None and check.reply.enhanced == "5.1.1"


def test_foreign_domain_passes_untouched(engine: ListEngine, site: Site):
    check = engine.check_recipient("<team@elsewhere.example>")
    assert check.reply is None
    assert check.list_id is None
    assert not check.is_list
    assert engine.check_recipient("<postmaster>").reply is None


@pytest.mark.parametrize("sub", ["request", "confirm", "join", "leave", "subscribe"])
def test_email_command_addresses_are_accepted(engine: ListEngine, site: Site, sub: str):
    name, _plus, ext = sub.partition("+")
    local = f"team-{name}" + (f"+{ext}" if ext else "")
    check = engine.check_recipient(f"<{site.addr(local)}>")
    assert check.reply is None
    assert check.list_id == f"team.{site.host}"
    assert check.subaddress is Subaddress(name)


# --- end of message -----------------------------------------------------------------------
def test_no_list_recipient_is_accepted_unchanged(engine: ListEngine, site: Site):
    raw = make_post("anne@example.com", "friend@elsewhere.example")
    verdict = engine.decide(envelope("friend@elsewhere.example"), raw)
    assert verdict == Accept()
    assert engine.counter.pending() == 0


def test_member_post_is_accepted_and_counted(engine: ListEngine, site: Site):
    raw = make_post("Anne <anne@example.com>", site.addr("team"))
    verdict = engine.decide(envelope(site.addr("team"), mail_from="anne@example.com"), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.del_recipients == (f"<{site.addr('team')}>",)
    assert verdict.edits.add_recipients == ("anne@example.com", "bob@example.com")
    (outcome,) = verdict.outcomes
    assert isinstance(outcome, Accepted)
    assert verdict.stored.held == {} and verdict.stored.outbox == {}
    assert site.held() == []
    engine.decide(envelope(site.addr("team")), make_post("bob@example.com", site.addr("team")))
    # The counter is written in batches: two posts pending, then one additive update.
    assert engine.counter.pending() == 2
    assert engine.counter.flush()
    assert engine.counter.pending() == 0
    after = site.mlist()
    assert after.post_id == 3
    assert after.last_post_at is not None
    assert engine.counter.flush()
    assert site.mlist().post_id == 3


def test_post_number_in_the_subject_prefix_is_counted_at_once(engine: ListEngine, site: Site):
    with site.sessions.begin() as s:
        lists.get(s, site.addr("team")).subject_prefix = "[Team %d] "
    raw = make_post("anne@example.com", site.addr("team"))
    assert isinstance(engine.decide(envelope(site.addr("team")), raw), Accept)
    assert engine.counter.pending() == 0
    assert site.mlist().post_id == 2


@pytest.mark.parametrize("prefix", ["[Team] ", "[Team %d] "])
def test_the_post_is_counted_on_the_engines_clock(site: Site, prefix: str):
    with site.sessions.begin() as s:
        lists.get(s, site.addr("team")).subject_prefix = prefix
    clock = ManualClock(datetime(2031, 2, 3, 4, 5, tzinfo=UTC))
    engine = ListEngine(site.sessions, clock=clock)
    engine.decide(envelope(site.addr("team")), make_post("anne@example.com", site.addr("team")))
    engine.close()  # the batched count is written here
    last = site.mlist().last_post_at
    assert last is not None and last.replace(tzinfo=UTC) == clock()


def test_close_writes_the_pending_counts(site: Site):
    engine = ListEngine(site.sessions)
    engine.decide(envelope(site.addr("team")), make_post("anne@example.com", site.addr("team")))
    assert site.mlist().post_id == 1
    engine.close()
    assert site.mlist().post_id == 2


def test_changes_by_any_writer_reach_the_next_decision(engine: ListEngine, site: Site):
    """The engine keeps list snapshots; database triggers make every change visible."""
    team = site.addr("team")

    def decide(sender: str = "anne@example.com"):
        return engine.decide(envelope(team), make_post(sender, team))

    assert decide().edits.add_recipients == ("anne@example.com", "bob@example.com")
    with site.sessions.begin() as s:
        members.add(s, lists.get(s, team), "carol@example.com")
    assert decide().edits.add_recipients == (
        "anne@example.com",
        "bob@example.com",
        "carol@example.com",
    )
    # Hand-written SQL, no ORM: a list setting and an address preference.
    with site.sessions.begin() as s:
        s.execute(
            text(
                "UPDATE mailing_lists SET default_nonmember_action = 'accept' "
                "WHERE list_name = 'team' AND mail_host = :host"
            ),
            {"host": site.host},
        )
    assert isinstance(decide("stranger@example.net"), Accept)
    with site.sessions.begin() as s:
        s.execute(
            text("UPDATE addresses SET delivery_mode = 'mime_digests' WHERE email = :e"),
            {"e": "bob@example.com"},
        )
    assert decide().edits.add_recipients == ("anne@example.com", "carol@example.com")
    with site.sessions.begin() as s:
        members.remove(s, lists.get(s, team), "carol@example.com", MemberRole.member)
    assert decide().edits.add_recipients == ("anne@example.com",)
    with site.sessions.begin() as s:
        members.add(s, lists.get(s, team), "nina@example.net", MemberRole.owner)
    verdict = engine.decide(envelope(site.addr("team-owner")), make_post("x@y.test", team))
    assert verdict.edits.add_recipients == (
        "mod@example.com",
        "nina@example.net",
        "olive@example.com",
    )


def test_with_other_recipients_the_list_copy_goes_through_the_outbox(
    engine: ListEngine, site: Site
):
    raw = make_post("anne@example.com", site.addr("team"))
    verdict = engine.decide(envelope(site.addr("team"), "x@elsewhere.test"), raw)
    assert isinstance(verdict, Accept)
    # The other recipient keeps the original; the list recipient is removed from it.
    assert verdict.edits.del_recipients == (f"<{site.addr('team')}>",)
    assert verdict.edits.add_recipients == ()
    (outcome,) = verdict.outcomes
    rows = site.outbox()
    assert [r.id for r in rows] == [verdict.stored.outbox[outcome.recipient]]
    assert rows[0].kind == "post"
    assert "anne@example.com" in rows[0].recipients
    # The members' copy: the list's headers and footer around the original text.
    assert b"List-Id: " in rows[0].raw
    assert b"Hello, list." in rows[0].raw
    assert b"mailing list -- " in rows[0].raw


def test_a_list_larger_than_expand_in_place_max_goes_through_the_outbox(site: Site):
    engine = ListEngine(site.sessions, expand_in_place_max=0)
    raw = make_post("anne@example.com", site.addr("team"))
    verdict = engine.decide(envelope(site.addr("team")), raw)
    assert isinstance(verdict, Discard)  # answered 250; the copy is in the outbox
    (row,) = [r for r in site.outbox() if r.kind == "post"]
    assert verdict.stored.outbox == {f"<{site.addr('team')}>": row.id}
    assert "anne@example.com" in row.recipients
    assert engine.counter.pending() == 1


def test_nonmember_post_is_held_and_stored(engine: ListEngine, site: Site):
    raw = make_post("Stranger <Stranger@Example.net>", site.addr("team"), subject="Buy now")
    env = envelope(site.addr("team"), mail_from="bounce@example.net")
    verdict = engine.decide(env, raw)
    assert isinstance(verdict, Discard)
    (outcome,) = verdict.outcomes
    assert isinstance(outcome, Held)
    assert [r.rule for r in outcome.reasons] == [NONMEMBER_MODERATION]
    (held,) = site.held()
    assert verdict.stored.held == {outcome.recipient: held.id}
    assert held.sender == "stranger@example.net"
    assert held.subject == "Buy now"
    assert held.message_id.startswith("<") and held.message_id.endswith("@client.test>")
    assert held.raw == raw
    assert held.reasons == [[NONMEMBER_MODERATION, outcome.reasons[0].text]]
    assert held.envelope["mail_from"] == "bounce@example.net"
    assert held.envelope["recipients"] == [f"<{site.addr('team')}>"]
    assert held.envelope["queue_id"] == "4ABCDEF"
    assert engine.counter.pending() == 0


def test_a_nonmember_who_posts_is_recorded_once_as_a_nonmember(engine: ListEngine, site: Site):
    """Mailman adds every unknown poster to the nonmember roster (Postorius then sets the
    sender's moderation action from the held post)."""
    for n in range(2):
        raw = make_post("Stranger <Stranger@Example.net>", site.addr("team"), subject=f"p{n}")
        engine.decide(envelope(site.addr("team")), raw)
    member_post = make_post("anne@example.com", site.addr("team"))
    engine.decide(envelope(site.addr("team")), member_post)
    with site.sessions() as s:
        mlist = site.mlist()
        nonmembers = [a.email for _m, a in members.roster(s, mlist, MemberRole.nonmember)]
        address = s.scalar(select(Address).where(Address.email == "stranger@example.net"))
    assert nonmembers == ["stranger@example.net"]
    assert address is not None and address.verified_on is None and address.user_id is None
    # A nonmember is on the roster, not on the staff: mail to -owner does not reach them.
    raw = make_post("someone@example.org", site.addr("team-owner"))
    verdict = engine.decide(envelope(site.addr("team-owner")), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("mod@example.com", "olive@example.com")


def test_the_same_list_twice_in_one_transaction_is_decided_once(engine: ListEngine, site: Site):
    raw = make_post("stranger@example.net", site.addr("team"))
    env = envelope(site.addr("team"), site.addr("TEAM"))
    verdict = engine.decide(env, raw)
    assert isinstance(verdict, Discard)
    assert len(verdict.outcomes) == 1
    assert len(site.held()) == 1


def test_a_repeated_list_recipient_is_removed_not_passed_through(engine: ListEngine, site: Site):
    raw = make_post("anne@example.com", site.addr("team"))
    env = envelope(site.addr("team"), site.addr("Team"))
    verdict = engine.decide(env, raw)
    assert isinstance(verdict, Accept)
    assert set(verdict.edits.del_recipients) == {f"<{site.addr('team')}>", f"<{site.addr('Team')}>"}
    assert "anne@example.com" in verdict.edits.add_recipients
    assert not [r for r in verdict.edits.add_recipients if site.host in r]
    assert engine.counter.pending() == 1


def test_held_post_with_another_recipient_still_goes_to_it(engine: ListEngine, site: Site):
    raw = make_post("stranger@example.net", site.addr("team"))
    verdict = engine.decide(envelope(site.addr("team"), "friend@elsewhere.test"), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.del_recipients == (f"<{site.addr('team')}>",)
    assert verdict.edits.add_recipients == ()
    assert len(site.held()) == 1


def test_discarded_loop_stores_nothing(engine: ListEngine, site: Site):
    raw = make_post(
        "anne@example.com",
        site.addr("team"),
        headers={"List-Post": f"<mailto:{site.addr('team')}>"},
    )
    verdict = engine.decide(envelope(site.addr("team")), raw)
    assert isinstance(verdict, Discard)
    assert isinstance(verdict.outcomes[0], Dropped)
    assert site.held() == []
    assert engine.counter.pending() == 0


def test_owner_address_fans_out_to_owners_and_moderators(engine: ListEngine, site: Site):
    raw = make_post("stranger@example.net", site.addr("team-owner"))
    verdict = engine.decide(envelope(site.addr("team-owner")), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.del_recipients == (f"<{site.addr('team-owner')}>",)
    assert verdict.edits.add_recipients == ("mod@example.com", "olive@example.com")
    # Mail to the owners is not a post: not moderated, not counted.
    assert site.held() == []
    assert engine.counter.pending() == 0


def test_owner_address_without_owners_goes_to_the_site_owner(engine: ListEngine, site: Site):
    with site.sessions.begin() as s:
        lists.create(s, site.addr("orphan"))
    verdict = engine.decide(
        envelope(site.addr("orphan-owner")), make_post("x@example.net", site.addr("orphan-owner"))
    )
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("postmaster@site.test",)
    # Without a site owner configured, nobody is there: say 250, deliver nothing.
    bare = ListEngine(site.sessions)
    verdict = bare.decide(
        envelope(site.addr("orphan-owner")), make_post("x@example.net", site.addr("orphan-owner"))
    )
    assert isinstance(verdict, Discard)


def test_bounce_is_recorded(engine: ListEngine, site: Site):
    rcpt = site.addr("team-bounces+Anne=example.com")
    raw = make_post("MAILER-DAEMON@mx.example.com", rcpt, subject="Undelivered")
    verdict = engine.decide(envelope(rcpt, mail_from=""), raw)
    assert isinstance(verdict, Discard)
    with site.sessions() as s:
        mlist = lists.get(s, site.addr("team"))
        (event,) = s.scalars(select(BounceEvent).where(BounceEvent.mailing_list_id == mlist.id))
        # the VERP address names the member (the DSN's own parsing: tests/unit/test_dsn.py)
        assert event.email == "anne@example.com"
        assert not event.processed
        assert event.message_id.endswith("@client.test>")
    assert engine.counter.pending() == 0


def test_every_list_refusing_refuses_the_message_and_stores_nothing(engine: ListEngine, site: Site):
    with site.sessions.begin() as s:
        for name in ("strict", "stricter"):
            lists.create(s, site.addr(name)).default_nonmember_action = Action.reject
    raw = make_post("stranger@example.net", site.addr("strict"))
    verdict = engine.decide(envelope(site.addr("strict"), site.addr("stricter")), raw)
    assert isinstance(verdict, Reject)
    assert (verdict.reply.code, verdict.reply.enhanced) == (550, "5.7.1")
    assert site.addr("strict") in verdict.reply.text
    assert site.held("strict") == [] and site.outbox() == []


def test_one_refusing_list_among_others_is_dropped_and_the_rest_is_delivered(
    engine: ListEngine, site: Site
):
    with site.sessions.begin() as s:
        strict = lists.create(s, site.addr("strict"))
        strict.default_nonmember_action = Action.reject
    raw = make_post("stranger@example.net", site.addr("team"))
    verdict = engine.decide(envelope(site.addr("team"), site.addr("strict"), "x@else.test"), raw)
    assert isinstance(verdict, Accept)  # 250: not every recipient was refused
    assert set(verdict.edits.del_recipients) == {
        f"<{site.addr('team')}>",
        f"<{site.addr('strict')}>",
    }
    assert [type(o) for o in verdict.outcomes] == [Held, Refused]
    assert len(site.held("team")) == 1
    # The sender is not authenticated: no refusal notice (it would be backscatter).
    assert [r.kind for r in site.outbox()] == ["notice"]  # the moderators' hold notice
    assert site.outbox()[0].recipients == ["mod@example.com", "olive@example.com"]


def test_a_refused_authenticated_sender_is_told_by_mail(site: Site):
    engine = ListEngine(site.sessions, auth_policy=AuthenticationPolicy(trust_sasl_senders=True))
    with site.sessions.begin() as s:
        strict = lists.create(s, site.addr("strict"))
        strict.default_member_action = Action.reject
        members.add(s, strict, "anne@example.com")
    raw = make_post("anne@example.com", site.addr("team"))
    # (trust_sasl_senders: the login vouches for the From: that is the envelope sender)
    env = envelope(site.addr("team"), site.addr("strict"), mail_from="anne@example.com")
    env.auth_user = "anne"
    verdict = engine.decide(env, raw)
    assert isinstance(verdict, Discard)  # both list copies handled; nothing else remains
    rows = site.outbox()
    notices = [r for r in rows if r.kind == "notice"]
    posts = [r for r in rows if r.kind == "post"]
    assert [r.recipients for r in notices] == [["anne@example.com"]]
    assert b"was not distributed" in notices[0].raw
    assert b"Auto-Submitted: auto-replied" in notices[0].raw
    assert len(posts) == 1 and "anne@example.com" in posts[0].recipients
    engine.counter.flush()
    assert site.mlist("team").post_id == 2
    assert site.mlist("strict").post_id == 1


def test_hold_in_one_list_accept_in_another(engine: ListEngine, site: Site):
    with site.sessions.begin() as s:
        open_list = lists.create(s, site.addr("open"))
        open_list.default_nonmember_action = Action.accept
        members.add(s, open_list, "carol@example.com")
    raw = make_post("stranger@example.net", site.addr("team"))
    verdict = engine.decide(envelope(site.addr("team"), site.addr("open")), raw)
    assert isinstance(verdict, Discard)  # every copy is stored: held, or in the outbox
    assert [type(o) for o in verdict.outcomes] == [Held, Accepted]
    assert len(site.held("team")) == 1
    posts = [r for r in site.outbox() if r.kind == "post"]
    assert [r.recipients for r in posts] == [["carol@example.com"]]
    # What was stored, by list address, beside the outcomes.
    (held,) = site.held("team")
    assert verdict.stored.held == {f"<{site.addr('team')}>": held.id}
    assert verdict.stored.outbox == {f"<{site.addr('open')}>": posts[0].id}
    engine.counter.flush()
    assert site.mlist("open").post_id == 2
    assert site.mlist("team").post_id == 1


def test_a_list_that_defers_defers_the_whole_post_and_stores_nothing(
    engine: ListEngine, site: Site, monkeypatch: pytest.MonkeyPatch
):
    # No rule defers today; the variant is there for one that must (and says 4xx, never 5xx).
    later = temporary("4.7.0", "the list cannot decide now")

    def defer(target: Target, *args: object) -> Deferred:
        return Deferred(target.found.list_id, target.recipient, later)

    monkeypatch.setattr(decide, "outcome_for", defer)
    raw = make_post("stranger@example.net", site.addr("team"))
    verdict = engine.decide(envelope(site.addr("team"), "x@elsewhere.test"), raw)
    assert verdict == TempFail(later)
    assert site.held() == [] and site.outbox() == []
    assert engine.counter.pending() == 0


# --- the database cannot answer -----------------------------------------------------------
def _assert_tempfail(engine: ListEngine, list_address: str) -> None:
    check = engine.check_recipient(f"<{list_address}>")
    assert check.reply is not None
    assert (check.reply.code, check.reply.enhanced) == (451, "4.3.0")
    verdict = engine.decide(envelope(list_address), make_post("anne@example.com", list_address))
    assert isinstance(verdict, TempFail)
    assert (verdict.reply.code, verdict.reply.enhanced) == (451, "4.3.0")


def test_locked_sqlite_database_gives_451(sqlite_url: str):
    db = make_engine(sqlite_url, timeout=0.2)
    sessions = sessionmaker_for(db)
    with sessions.begin() as s:
        domains.create(s, "locked.test")
        team = lists.create(s, "team@locked.test")
        members.add(s, team, "anne@example.com")
    engine = ListEngine(sessions)
    locker = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        _assert_tempfail(engine, "team@locked.test")
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    # Once the lock is gone the same engine answers again, and nothing was counted.
    assert engine.check_recipient("<team@locked.test>").reply is None
    assert engine.counter.pending() == 0
    with sessions() as s:
        assert lists.get(s, "team@locked.test").post_id == 1
    db.dispose()


def test_locked_sqlite_database_gives_451_for_a_domain_already_known(sqlite_url: str):
    """The list lookup that runs on the driver's cursor (lists.roster.driver_rows) turns a
    lock held past the timeout into the same 451 as every other query."""
    db = make_engine(sqlite_url, timeout=0.2)
    sessions = sessionmaker_for(db)
    with sessions.begin() as s:
        domains.create(s, "known.test")
        members.add(s, lists.create(s, "team@known.test"), "anne@example.com")
    engine = ListEngine(sessions)
    assert engine.check_recipient("<team@known.test>").is_list  # the domain's answer kept
    locker = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        check = engine.check_recipient("<team@known.test>")
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert check.reply is not None and (check.reply.code, check.reply.enhanced) == (451, "4.3.0")
    assert engine.check_recipient("<team@known.test>").is_list
    db.dispose()


def test_unreachable_postgresql_gives_451():
    url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nowhere"
    db = make_engine(url, timeout=1)
    try:
        _assert_tempfail(ListEngine(sessionmaker_for(db)), "team@lists.test")
    finally:
        db.dispose()
