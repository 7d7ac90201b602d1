"""The end-to-end scenarios, each written once and run through every front end
(tests/integration/frontends.py) on SQLite and on PostgreSQL: a real MTA, built from the
contrib/ files, in front of a real ``mtaplugin serve``."""

from __future__ import annotations

import time

import pytest

from mtaplugin.enums import Action, DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.lists.domain_set import DOMAINS_FRESH
from mtaplugin.manage import domains, lists, members
from mtaplugin.posting.rules.moderation import NONMEMBER_MODERATION
from tests.helpers import make_post, unique
from tests.integration.frontends import FrontEnd
from tests.integration.labs import DOMAIN, PASSTHROUGH
from tests.replies import NO_SUCH_LIST, REFUSED_BY_RULE, TRY_LATER, Reply, said

PEOPLE = ("ann@example.org", "bob@example.org", "cy@example.net")


def test_a_member_post_reaches_every_member_once(front_end: FrontEnd) -> None:
    mlist = front_end.make_list(*PEOPLE)
    with front_end.sessions.begin() as s:
        stored = lists.get(s, mlist.fqdn_listname)
        # (The lab's scheduler sends the periodic digests once when it starts: a digest
        # with this post in it would be a copy for dee.)
        stored.digest_send_periodic = False
        members.add(s, stored, "dee@example.org").delivery_mode = DeliveryMode.mime_digests
        members.add(s, stored, "eve@example.org").delivery_status = DeliveryStatus.by_user
    subject = unique("post")
    post = make_post("ann@example.org", mlist.posting_address, subject=subject)

    assert front_end.send("ann@example.org", [mlist.posting_address], post) is None

    front_end.waits(lambda: all(front_end.copies(subject, p) for p in PEOPLE))
    front_end.list_address_done(mlist.posting_address)
    front_end.settle()
    assert [front_end.copies(subject, p) for p in PEOPLE] == [1, 1, 1]
    # Not to the digest member, nor to the one who stopped delivery.
    assert not front_end.copies(subject, "dee@example.org")
    assert not front_end.copies(subject, "eve@example.org")
    copy = next(m for m in front_end.lab.sink.to("bob@example.org") if subject.encode() in m.data)
    assert b"Hello, list." in copy.data
    # The list address was replaced by the members, never delivered as it is.
    assert mlist.posting_address not in front_end.lab.sink.recipients()

    # The post counter is written in batches, about once a second.
    def counted() -> bool:
        with front_end.sessions() as s:
            return lists.get(s, mlist.fqdn_listname).post_id == 2

    front_end.waits(counted, timeout=10)


def test_an_unknown_list_in_a_list_domain_is_refused_at_rcpt(inline_front_end: FrontEnd) -> None:
    post = make_post("ann@example.org", f"no-such-list@{DOMAIN}")
    refused = inline_front_end.send("ann@example.org", [f"no-such-list@{DOMAIN}"], post)
    assert said(refused) == ("rcpt", NO_SUCH_LIST), refused
    assert refused is not None and "no such list" in refused.text


def test_a_new_list_domain_is_relayed_within_seconds_and_no_other(
    relaying_front_end: FrontEnd,
) -> None:
    front_end = relaying_front_end
    host = f"{unique('dom')}.test"
    reply, words = front_end.relay_denied
    # A domain that holds no list is not relayed for this client (127.0.0.2) ... (Another
    # address than the list's: Postfix's resolver client caches its last answer.)
    refused = front_end.send("gus@example.org", [f"info@{host}"], make_post("gus@example.org", "x"))
    assert said(refused) == ("rcpt", reply), refused
    assert refused is not None and words in refused.text
    # ... until it does: the MTA asks the list database on every lookup.
    with front_end.sessions.begin() as s:
        domains.create(s, host)
        members.add(s, lists.create(s, f"team@{host}"), "gus@example.org")
    # The lookup server keeps each domain's answer DOMAINS_FRESH seconds (one query per
    # domain, not per member's copy): the refusal just above is remembered that long.
    time.sleep(DOMAINS_FRESH)
    subject = unique("new-domain")
    post = make_post("gus@example.org", f"team@{host}", subject=subject)
    assert front_end.send("gus@example.org", [f"team@{host}"], post) is None
    front_end.waits(lambda: front_end.copies(subject, "gus@example.org"))


def test_a_nonmember_post_is_refused_naming_the_list_and_the_rule(front_end: FrontEnd) -> None:
    mlist = front_end.make_list("ann@example.org", default_nonmember_action=Action.reject)
    subject = unique("refused")
    sender = f"{unique('nonmember')}@example.com"
    post = make_post(sender, mlist.posting_address, subject=subject)
    sentence = f"Posts to {mlist.fqdn_listname} from nonmembers are not accepted"

    refused = front_end.send(sender, [mlist.posting_address], post)

    if front_end.inline:
        # Refused in the SMTP dialogue: the client keeps the post and tells its user.
        assert said(refused) == ("data", REFUSED_BY_RULE), refused
        assert (
            refused is not None
            and NONMEMBER_MODERATION in refused.text
            and sentence in refused.text
        )
        front_end.settle()
        assert not front_end.lab.sink.to(sender)  # refused, not accepted: no bounce
    else:
        # Exim said 250 before the front end decided: the refusal is a bounce, with
        # the front end's reply (LMTP's 550, the pipe's exit 77 and its text) in it.
        assert refused is None
        front_end.waits(lambda: front_end.bounces_to(sender))
        (bounce,) = front_end.bounces_to(sender)
        assert NONMEMBER_MODERATION.encode() in bounce.data
        assert mlist.fqdn_listname.encode() in bounce.data
    assert not front_end.copies(subject, "ann@example.org")


def test_a_held_post_is_stored_before_the_250(front_end: FrontEnd) -> None:
    mlist = front_end.make_list("ann@example.org")
    subject = unique("held")
    post = make_post("stranger@example.com", mlist.posting_address, subject=subject)

    assert front_end.send("stranger@example.com", [mlist.posting_address], post) is None
    if not front_end.inline:
        # The 250 that counts is the front end's own answer to Exim.
        front_end.decided(mlist.posting_address)

    held = front_end.held(mlist)  # no waiting: stored before the 250
    assert [(h.subject, h.sender) for h in held] == [(subject, "stranger@example.com")]
    assert [rule for rule, _text in held[0].reasons] == [NONMEMBER_MODERATION]
    assert f"Subject: {subject}".encode() in held[0].raw and b"Hello, list." in held[0].raw
    front_end.settle()
    # Decided once: one hold, and nothing delivered.
    assert len(front_end.held(mlist)) == 1
    assert not front_end.copies(subject, "ann@example.org")


def test_a_database_outage_is_answered_try_later_and_nothing_is_lost(
    front_end: FrontEnd,
) -> None:
    people = ("ivy@example.org", "jo@example.org")
    mlist = front_end.make_list(*people)
    subject = unique("outage")
    post = make_post("ivy@example.org", mlist.posting_address, subject=subject)

    if front_end.inline:
        # The database goes away between RCPT and end of data.
        with front_end.lab.connect() as smtp:
            assert smtp.mail("ivy@example.org")[0] == 250
            assert smtp.rcpt(mlist.posting_address)[0] == 250
            with front_end.outage():
                code, text = smtp.data(front_end.lab.prepare(post))
        assert Reply.of(code, text) == TRY_LATER, text
        assert b"list database" in text
        assert not front_end.copies(subject, "ivy@example.org")
        # The client's MTA tries again later: the same post goes through.
        assert front_end.send("ivy@example.org", [mlist.posting_address], post) is None
    else:
        # Exim has the post (250); the front end's 4xx (or exit 75) makes it defer the
        # delivery and retry it once the database answers again.
        with front_end.outage():
            assert front_end.send("ivy@example.org", [mlist.posting_address], post) is None
            assert "defer" in front_end.deferred(mlist.posting_address)
            assert not front_end.copies(subject, "ivy@example.org")

    front_end.waits(lambda: all(front_end.copies(subject, p) for p in people), 90)
    front_end.settle()
    assert [front_end.copies(subject, p) for p in people] == [1, 1]
    assert not front_end.bounces_to("ivy@example.org")


def _senders(front_end: FrontEnd, marker: str, *people: str) -> dict[str, set[str]]:
    """Each address's envelope senders of the copies carrying ``marker``."""
    sink = front_end.lab.sink
    return {
        p: {m.mail_from.strip("<>") for m in sink.to(p) if marker.encode() in m.data}
        for p in people
    }


def test_every_copy_leaves_from_the_lists_bounces_address(front_end: FrontEnd) -> None:
    """In place (the milters' CHGFROM) and through the outbox (Exim): the members'
    bounces go to the list, never to the poster."""
    mlist = front_end.make_list(*PEOPLE)
    subject = unique("envfrom")
    post = make_post("ann@example.org", mlist.posting_address, subject=subject)

    assert front_end.send("ann@example.org", [mlist.posting_address], post) is None

    front_end.waits(lambda: all(front_end.copies(subject, p) for p in PEOPLE))
    assert _senders(front_end, subject, *PEOPLE) == {p: {mlist.bounces_address} for p in PEOPLE}


def test_another_recipient_gets_the_post_from_the_poster(front_end: FrontEnd) -> None:
    """With a recipient that is no list, the list's copy goes through the outbox from
    the list's -bounces address, and the other recipient's copy keeps the poster's
    envelope sender: the list never changes mail that is not its own."""
    if front_end.name == "sendmail-milter":
        pytest.skip("the Sendmail lab relays only the list domains (its access map)")
    mlist = front_end.make_list("ann@example.org", "bob@example.org")
    other = f"{unique('friend')}@{PASSTHROUGH}"
    subject = unique("envfrom-other")
    post = make_post("ann@example.org", mlist.posting_address, subject=subject)

    assert front_end.send("ann@example.org", [mlist.posting_address, other], post) is None

    front_end.waits(
        lambda: all(
            front_end.copies(subject, p) for p in (other, "ann@example.org", "bob@example.org")
        )
    )
    assert _senders(front_end, subject, "ann@example.org", "bob@example.org", other) == {
        "ann@example.org": {mlist.bounces_address},
        "bob@example.org": {mlist.bounces_address},
        other: {"ann@example.org"},
    }


def test_notices_and_owner_mail_leave_from_the_lists_bounces_address(
    front_end: FrontEnd,
) -> None:
    mlist = front_end.make_list("ann@example.org")
    with front_end.sessions.begin() as s:
        members.add(s, lists.get(s, mlist.fqdn_listname), "own@example.org", MemberRole.owner)
    # The moderators' notice of a held post.
    held = unique("held-notice")
    stranger = f"{unique('stranger')}@example.com"
    post = make_post(stranger, mlist.posting_address, subject=held)
    assert front_end.send(stranger, [mlist.posting_address], post) is None
    front_end.waits(lambda: front_end.copies(held, "own@example.org"))
    # Mail to the list's -owner address, forwarded to the owners.
    to_owner = unique("to-owner")
    post = make_post(stranger, mlist.owner_address, subject=to_owner)
    assert front_end.send(stranger, [mlist.owner_address], post) is None
    front_end.waits(lambda: front_end.copies(to_owner, "own@example.org"))

    assert _senders(front_end, held, "own@example.org") == {
        "own@example.org": {mlist.bounces_address}
    }
    assert _senders(front_end, to_owner, "own@example.org") == {
        "own@example.org": {mlist.bounces_address}
    }
    assert not front_end.lab.sink.to(stranger)  # nothing went back to the sender
