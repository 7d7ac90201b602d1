"""Urgent: and topics (Mailman 2.1), decided by the engine on a real database."""

from __future__ import annotations

import email

import pytest

from mtaplugin import passwords
from mtaplugin.engine import ListEngine
from mtaplugin.enums import DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.manage import held, lists, members
from mtaplugin.posting.rules.urgent import URGENT
from mtaplugin.posting.verdict import Accept, Discard, Held
from mtaplugin.vocabulary.envelope import Envelope, Post
from mtaplugin.vocabulary.topics import (
    TopicChoice,
    compile_topics,
    narrow,
    post_topics,
)
from tests.helpers import make_post
from tests.unit.sites import Site


def envelope(site: Site, mail_from: str = "anne@example.com", auth_user: str = "") -> Envelope:
    return Envelope(
        mail_from=mail_from,
        recipients=[f"<{site.address}>"],
        client_address="192.0.2.1",
        helo="client.test",
        auth_user=auth_user,
        queue_id="4URGENT",
    )


def add_member(site: Site, email_: str, **prefs: object) -> None:
    """A member made directly in the database (digest modes are refused by the
    management layer until digests are built)."""
    with site.sessions.begin() as s:
        member = members.add(s, lists.get(s, site.address), email_)
        for key, value in prefs.items():
            setattr(member, key, value)


def headers_after(verdict: Accept) -> dict[str, str | None]:
    """The header edits of an in-place copy: name → new value (None: removed)."""
    return {op.name.lower(): op.value for op in verdict.edits.header_ops}


def urgent_from_the_moderator(engine: ListEngine, site: Site, urgent: str, **post: str) -> Accept:
    """The verdict on a post with ``Urgent: {urgent}`` from the list's moderator, who
    authenticated (SMTP AUTH); it is accepted."""
    raw = make_post("mod@example.com", site.address, headers={"Urgent": urgent}, **post)
    verdict = engine.decide(envelope(site, "mod@example.com", "mod@example.com"), raw)
    assert isinstance(verdict, Accept)
    return verdict


# --- Urgent: ----------------------------------------------------------------------------
def test_an_urgent_post_from_an_authenticated_moderator_reaches_every_member(
    engine: ListEngine, site: Site
):
    add_member(site, "dora@example.com", delivery_mode=DeliveryMode.mime_digests)
    add_member(site, "nick@example.com", delivery_status=DeliveryStatus.by_user)
    verdict = urgent_from_the_moderator(engine, site, "yes")
    assert verdict.edits.add_recipients == (
        "anne@example.com",
        "bob@example.com",
        "dora@example.com",
        "nick@example.com",
    )
    # the header is removed from the copy in place
    assert "urgent" in headers_after(verdict)
    assert headers_after(verdict)["urgent"] is None


def test_a_normal_post_skips_digest_and_nomail_members(engine: ListEngine, site: Site):
    add_member(site, "dora@example.com", delivery_mode=DeliveryMode.mime_digests)
    raw = make_post("anne@example.com", site.address)
    verdict = engine.decide(envelope(site), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("anne@example.com", "bob@example.com")


def test_the_moderator_password_makes_a_post_urgent_and_the_outbox_copy_lacks_it(site: Site):
    site.update(moderator_password=passwords.hash_password("s3cret"))
    add_member(site, "dora@example.com", delivery_mode=DeliveryMode.plaintext_digests)
    engine = ListEngine(site.sessions, expand_in_place_max=0)  # through the outbox
    raw = make_post("anne@example.com", site.address, headers={"Urgent": "s3cret"})
    verdict = engine.decide(envelope(site), raw)
    assert isinstance(verdict, Discard)
    (row,) = [r for r in site.outbox() if r.kind == "post"]
    assert "dora@example.com" in row.recipients
    copy = email.message_from_bytes(row.raw)
    assert copy["Urgent"] is None
    assert b"s3cret" not in row.raw


def test_a_wrong_urgent_value_holds_the_post_with_a_reason(engine: ListEngine, site: Site):
    site.update(moderator_password=passwords.hash_password("s3cret"))
    raw = make_post("anne@example.com", site.address, headers={"Urgent": "guess"})
    verdict = engine.decide(envelope(site), raw)
    (outcome,) = verdict.outcomes
    assert isinstance(outcome, Held)
    assert [r.rule for r in outcome.reasons] == [URGENT]
    assert "anne@example.com" in outcome.reasons[0].text
    (held,) = site.held()
    assert held.reasons[0][0] == URGENT


def test_urgent_from_an_unauthenticated_moderator_is_held(engine: ListEngine, site: Site):
    raw = make_post("mod@example.com", site.address, headers={"Urgent": "yes"})
    verdict = engine.decide(envelope(site, "mod@example.com"), raw)
    (outcome,) = verdict.outcomes
    assert isinstance(outcome, Held) and outcome.reasons[0].rule == URGENT


def test_an_empty_urgent_header_is_no_header(engine: ListEngine, site: Site):
    raw = make_post("anne@example.com", site.address, headers={"Urgent": " "})
    verdict = engine.decide(envelope(site), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("anne@example.com", "bob@example.com")


# --- topics -----------------------------------------------------------------------------
TOPICS = [["release", "release|rc[0-9]", "new versions"], ["social", "dinner\nparty", ""]]


def topics_site(site: Site) -> None:
    site.update(topics_enabled=True, topics=TOPICS)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        for member, address in members.roster(s, mlist, MemberRole.member):
            if address.email == "anne@example.com":
                member.topics = ["release"]
    add_member(site, "carl@example.com", topics=["social"], receive_nonmatching_topics=True)


def test_a_member_with_a_topic_gets_only_the_posts_about_it(engine: ListEngine, site: Site):
    topics_site(site)
    release = make_post("bob@example.com", site.address, subject="release 2.0 is out")
    verdict = engine.decide(envelope(site, "bob@example.com"), release)
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("anne@example.com", "bob@example.com")
    assert headers_after(verdict)["x-topics"] == "release"
    dinner = make_post("bob@example.com", site.address, subject="dinner on friday?")
    verdict = engine.decide(envelope(site, "bob@example.com"), dinner)
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("bob@example.com", "carl@example.com")
    assert headers_after(verdict)["x-topics"] == "social"


def test_a_post_matching_no_topic_goes_to_those_who_want_nonmatching(
    engine: ListEngine, site: Site
):
    topics_site(site)
    raw = make_post("bob@example.com", site.address, subject="the weather")
    verdict = engine.decide(envelope(site, "bob@example.com"), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("bob@example.com", "carl@example.com")
    # a poster's own X-Topics: is replaced (here: removed)
    forged = make_post(
        "bob@example.com", site.address, subject="x", headers={"X-Topics": "release"}
    )
    verdict = engine.decide(envelope(site, "bob@example.com"), forged)
    assert isinstance(verdict, Accept)
    assert headers_after(verdict)["x-topics"] is None


def test_topics_are_found_in_keywords_and_the_first_body_lines(engine: ListEngine, site: Site):
    topics_site(site)
    raw = make_post(
        "bob@example.com",
        site.address,
        subject="news",
        body="\nKeywords: rc3\n\nThe text.\n",
    )
    verdict = engine.decide(envelope(site, "bob@example.com"), raw)
    assert isinstance(verdict, Accept) and "anne@example.com" in verdict.edits.add_recipients
    site.update(topics_bodylines_limit=0)
    verdict = engine.decide(envelope(site, "bob@example.com"), raw)
    assert isinstance(verdict, Accept) and "anne@example.com" not in verdict.edits.add_recipients


def test_the_outbox_copy_honours_topics(site: Site):
    topics_site(site)
    engine = ListEngine(site.sessions, expand_in_place_max=0)
    raw = make_post("bob@example.com", site.address, subject="Dinner party")
    engine.decide(envelope(site, "bob@example.com"), raw)
    (row,) = [r for r in site.outbox() if r.kind == "post"]
    assert sorted(row.recipients) == ["bob@example.com", "carl@example.com"]
    assert email.message_from_bytes(row.raw)["X-Topics"] == "social"


def test_an_urgent_post_ignores_topics(engine: ListEngine, site: Site):
    topics_site(site)
    verdict = urgent_from_the_moderator(engine, site, "now", subject="dinner")
    assert verdict.edits.add_recipients == (
        "anne@example.com",
        "bob@example.com",
        "carl@example.com",
    )


def test_a_list_with_topics_off_ignores_the_members_choices(engine: ListEngine, site: Site):
    topics_site(site)
    site.update(topics_enabled=False)
    raw = make_post("bob@example.com", site.address, subject="dinner")
    verdict = engine.decide(envelope(site, "bob@example.com"), raw)
    assert isinstance(verdict, Accept)
    assert "anne@example.com" in verdict.edits.add_recipients
    assert "x-topics" not in headers_after(verdict)


@pytest.mark.parametrize(
    ("subject", "body", "limit", "expected"),
    [
        ("Re: RELEASE notes", "", 5, ("release",)),
        ("x", "Subject: dinner\n", 5, ("social",)),
        ("x", "a\nb\nc\nSubject: dinner\n", 3, ()),
        ("x", "a\nb\nc\nSubject: dinner\n", -1, ("social",)),
        ("party and rc1", "", 0, ("release", "social")),
        ("x", "just text mentioning release\n", 5, ()),
        ("=?utf-8?q?D=C3=AEner_and_rel=65ase?=", "", 0, ("release",)),
    ],
)
def test_post_topics(subject: str, body: str, limit: int, expected: tuple[str, ...]):
    topics = compile_topics(TOPICS, "test")
    post = Post(make_post("a@example.com", "l@example.com", subject=subject, body=body or "-\n"))
    assert post_topics(post, topics, limit) == expected


def test_a_broken_topic_is_left_out():
    assert [t.name for t in compile_topics([["bad", "("], ["ok", "x"], ["", "y"]], "t")] == ["ok"]


def test_narrow():
    choices = {
        "a@x": TopicChoice(frozenset({"release"})),
        "b@x": TopicChoice(frozenset({"social"}), receive_nonmatching=True),
    }
    everyone = ("a@x", "b@x", "c@x")
    assert narrow(everyone, choices, ("release",)) == ("a@x", "c@x")
    assert narrow(everyone, choices, ()) == ("b@x", "c@x")
    assert narrow(everyone, {}, ("release",)) == everyone


def test_a_released_hold_goes_to_whom_the_topics_and_urgent_say(site: Site):
    topics_site(site)
    site.update(moderator_password=passwords.hash_password("s3cret"))
    engine = ListEngine(site.sessions)
    # a nonmember's post about dinner is held; released, it skips anne (topic release)
    raw = make_post("stranger@example.net", site.address, subject="dinner at eight")
    engine.decide(envelope(site, "stranger@example.net"), raw)
    # a nonmember's urgent post (right password) is held by moderation too; released,
    # it reaches every member, the digest member included
    add_member(site, "dora@example.com", delivery_mode=DeliveryMode.mime_digests)
    urgent = make_post(
        "stranger@example.net", site.address, subject="dinner now", headers={"Urgent": "s3cret"}
    )
    engine.decide(envelope(site, "stranger@example.net"), urgent)
    first, second = site.held()
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        held.approve(held.Moderator(s, mlist, "mod@example.com"), first.id)
        held.approve(held.Moderator(s, mlist, "mod@example.com"), second.id)
    dinner, now = [r for r in site.outbox() if r.kind == "release"]
    assert sorted(dinner.recipients) == ["bob@example.com", "carl@example.com"]
    assert email.message_from_bytes(dinner.raw)["X-Topics"] == "social"
    assert sorted(now.recipients) == [
        "anne@example.com",
        "bob@example.com",
        "carl@example.com",
        "dora@example.com",
    ]
    assert b"s3cret" not in now.raw
