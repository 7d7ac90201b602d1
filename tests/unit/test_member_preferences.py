"""The member preferences Mailman documents, acting: receive_list_copy (avoid duplicates),
acknowledge_posts, personalize = full with ``$user_name`` and ``$user_language`` in the
footer.  (hide_address in ``who``: tests/unit/test_commands.py; topics:
tests/unit/test_urgent_topics.py.)"""

from __future__ import annotations

import email
from email.message import Message

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import ManualClock, system_clock
from mtaplugin.engine import ListEngine
from mtaplugin.enums import MemberRole, Personalization
from mtaplugin.mailauth.identity import AuthenticationPolicy
from mtaplugin.manage import lists, members
from mtaplugin.posting.verdict import Accept
from mtaplugin.testing.transport import FakeTransport
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import list_template, make_post
from tests.unit.outbox.util import delivery_for
from tests.unit.sites import Site

VERIFIER = "mx.test"


def envelope(site: Site, sender: str = "anne@example.com") -> Envelope:
    return Envelope(mail_from=sender, recipients=[f"<{site.address}>"], queue_id="QP")


def member_of(s: Session, site: Site, who: str):
    return members.get(s, lists.get(s, site.address), who, MemberRole.member)


def authenticated(sender: str) -> dict[str, str]:
    return {"Authentication-Results": f"{VERIFIER}; dkim=pass header.d={sender.split('@')[1]}"}


# --- receive_list_copy ------------------------------------------------------------------
def test_a_member_named_in_to_or_cc_who_avoids_duplicates_gets_no_list_copy(
    engine: ListEngine, site: Site
):
    with site.sessions.begin() as s:
        member_of(s, site, "bob@example.com").receive_list_copy = False
    named = make_post("anne@example.com", site.address, headers={"Cc": "Bob <BOB@example.com>"})
    verdict = engine.decide(envelope(site), named)
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("anne@example.com",)
    # not named: bob gets the list copy as usual
    verdict = engine.decide(envelope(site), make_post("anne@example.com", site.address))
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("anne@example.com", "bob@example.com")
    # a member who keeps receive_list_copy on gets it even when named
    with site.sessions.begin() as s:
        member_of(s, site, "bob@example.com").receive_list_copy = None
    verdict = engine.decide(envelope(site), named)
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("anne@example.com", "bob@example.com")


def test_avoiding_duplicates_holds_for_the_outbox_copy_too(site: Site):
    with site.sessions.begin() as s:
        member_of(s, site, "bob@example.com").receive_list_copy = False
    engine = ListEngine(site.sessions, expand_in_place_max=0)
    engine.decide(
        envelope(site),
        make_post("anne@example.com", site.address, headers={"Cc": "bob@example.com"}),
    )
    (row,) = [r for r in site.outbox() if r.kind == "post"]
    assert row.recipients == ["anne@example.com"]


# --- acknowledge_posts --------------------------------------------------------------------
def _ack_engine(site: Site) -> ListEngine:
    return ListEngine(
        site.sessions,
        auth_policy=AuthenticationPolicy(trusted_authserv_ids=frozenset({VERIFIER})),
        max_autoresponses_per_day=2,
    )


def acks(site: Site, who: str) -> list[Message]:
    return [m for m in site.mails_to(who) if "post acknowledgement" in str(m["Subject"])]


def test_acknowledge_posts_tells_the_authenticated_poster_within_the_daily_limit(site: Site):
    engine = _ack_engine(site)
    with site.sessions.begin() as s:
        member_of(s, site, "anne@example.com").acknowledge_posts = True
    post = make_post(
        "anne@example.com",
        site.address,
        subject="my news",
        headers=authenticated("anne@example.com"),
    )
    assert isinstance(engine.decide(envelope(site), post), Accept)
    (ack,) = acks(site, "anne@example.com")
    assert ack["Auto-Submitted"] == "auto-replied"
    text = ack.get_payload(decode=True).decode()
    assert "my news" in text and "was received and sent to the members" in text
    # the daily limit (replies.max_autoresponses_per_day, here 2)
    for _ in range(3):
        engine.decide(envelope(site), post)
    assert len(acks(site, "anne@example.com")) == 2


def test_no_acknowledgement_unasked_or_to_an_unauthenticated_from(site: Site):
    engine = _ack_engine(site)
    engine.decide(
        envelope(site, "bob@example.com"),
        make_post("bob@example.com", site.address, headers=authenticated("bob@example.com")),
    )
    assert acks(site, "bob@example.com") == []
    with site.sessions.begin() as s:
        member_of(s, site, "bob@example.com").acknowledge_posts = True
    engine.decide(envelope(site, "bob@example.com"), make_post("bob@example.com", site.address))
    assert acks(site, "bob@example.com") == []


# --- personalize = full, $user_name, $user_language -----------------------------------------
def copies(site: Site, *who: str) -> list[Message]:
    """Each member's own copy of the post whose subject is the site's host, as the outbox
    worker makes and sends it."""
    transport = FakeTransport()
    delivery_for(site.sessions, transport, ManualClock(system_clock())).run()
    found = []
    for address in who:
        (got,) = [m for m in transport.to(address) if site.host.encode() in m.data]
        found.append(email.message_from_bytes(got.data))
    return found


def test_full_personalization_names_the_member_in_to_and_the_footer(
    site: Site, module_sessions: sessionmaker[Session]
):
    site.update(personalize=Personalization.full)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        member_of(s, site, "anne@example.com").display_name = "Anne Ängström"
        member_of(s, site, "bob@example.com").preferred_language = "fr"
        s.add(
            list_template(
                mlist,
                "list:member:regular:footer",
                text="-- for $user_name_or_email ($user_language)",
            )
        )
    engine = ListEngine(site.sessions)
    post = make_post(
        "olive@example.com", site.address, subject=site.host, headers={"Cc": "x@elsewhere.test"}
    )
    engine.decide(envelope(site, "olive@example.com"), post)
    anne, bob = copies(site, "anne@example.com", "bob@example.com")
    assert "anne@example.com" in str(anne["To"]) and site.address not in str(anne["To"])
    assert "=?utf-8?" in str(anne["To"])  # the name, RFC 2047-encoded
    assert site.address in str(anne["Cc"]) and "x@elsewhere.test" in str(anne["Cc"])
    assert "-- for Anne Ängström (en)" in anne.get_payload(decode=True).decode()
    assert str(bob["To"]) == "bob@example.com"
    assert "-- for bob@example.com (fr)" in bob.get_payload(decode=True).decode()


def test_individual_personalization_keeps_to(site: Site):
    site.update(personalize=Personalization.individual)
    engine = ListEngine(site.sessions)
    engine.decide(envelope(site), make_post("anne@example.com", site.address, subject=site.host))
    (bob,) = copies(site, "bob@example.com")
    assert str(bob["To"]) == site.address
