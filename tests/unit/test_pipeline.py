"""``pipeline.process`` and the posting rules, on lists and members in a real database.

``process()`` decides from a :class:`~mtaplugin.vocabulary.snapshot.ListSnapshot`; the tests load it
with :func:`mtaplugin.lists.cache.load` from what they put in the database.
"""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from mtaplugin.enums import Action, DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.lists import cache
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import MailingList
from mtaplugin.posting import pipeline
from mtaplugin.posting.rules.loop import LOOP
from mtaplugin.posting.rules.moderation import MEMBER_MODERATION, NONMEMBER_MODERATION
from mtaplugin.posting.verdict import Accepted, Dropped, Held, ListOutcome, Refused
from mtaplugin.vocabulary import snapshot
from mtaplugin.vocabulary.envelope import Envelope, Post
from tests.helpers import make_post, unique
from tests.replies import REFUSED_BY_RULE, Reply

HOST = "lists.test"


@pytest.fixture
def session(txn_session: Session) -> Session:
    """One database per backend for this module; every test is rolled back."""
    return txn_session


@pytest.fixture
def mlist(session: Session) -> MailingList:
    domains.create(session, HOST)
    m = lists.create(session, f"{unique('team')}@{HOST}")
    members.add(session, m, "anne@example.com")
    members.add(session, m, "bob@example.com")
    members.add(session, m, "olive@example.com", MemberRole.owner)
    members.add(session, m, "mod@example.com", MemberRole.moderator)
    return m


def post(
    session: Session,
    mlist: MailingList,
    sender: str | None,
    headers: dict[str, str] | None = None,
    mail_from: str = "",
) -> ListOutcome:
    raw = make_post(sender or "", mlist.fqdn_listname, headers=headers)
    if sender is None:
        raw = b"\n".join(line for line in raw.split(b"\n") if not line.startswith(b"From:"))
    envelope = Envelope(
        mail_from=mail_from or (sender or ""),
        recipients=[f"<{mlist.fqdn_listname}>"],
        queue_id="TESTQ",
    )
    return pipeline.process(load(session, mlist), envelope, Post(raw), f"<{mlist.fqdn_listname}>")


def load(session: Session, mlist: MailingList) -> snapshot.ListSnapshot:
    """The list's snapshot as the engine would load it, from what the test wrote so far.

    It is read through a second session on the same connection (so it sees the test's
    uncommitted rows): loading detaches the list it reads from its session.
    """
    session.flush()
    with Session(bind=session.connection()) as reader:
        return cache.load(reader, mlist.id)


def rules(outcome: ListOutcome) -> list[str]:
    return [r.rule for r in outcome.reasons]


# --- members ------------------------------------------------------------------------------
def test_member_post_is_accepted_for_the_regular_members(session: Session, mlist: MailingList):
    out = post(session, mlist, "Anne Person <Anne@Example.com>")
    assert isinstance(out, Accepted)
    assert out.reasons == ()
    assert not isinstance(out, Refused)
    assert out.list_id == mlist.list_id
    assert out.recipient == f"<{mlist.fqdn_listname}>"
    # Owners and moderators are not members: they do not get list traffic as such.
    assert out.members == ("anne@example.com", "bob@example.com")


def test_recipients_follow_delivery_preferences(session: Session, mlist: MailingList):
    anne = members.get(session, mlist, "anne@example.com", MemberRole.member)
    anne.receive_own_postings = False
    members.add(session, mlist, "digest@example.com", delivery_mode=DeliveryMode.mime_digests)
    off = members.add(session, mlist, "off@example.com")
    off.delivery_status = DeliveryStatus.by_bounces
    # A preference on the address applies when the membership leaves it unset.
    addr_digest = members.add(session, mlist, "addrdigest@example.com")
    addr_digest.address.delivery_mode = DeliveryMode.plaintext_digests
    session.flush()
    out = post(session, mlist, "anne@example.com")
    assert isinstance(out, Accepted)
    assert out.members == ("bob@example.com",)
    out = post(session, mlist, "bob@example.com")
    assert out.members == ("anne@example.com", "bob@example.com")


#: what a moderation action decides about a post
DECIDES: dict[Action, type[ListOutcome]] = {
    Action.hold: Held,
    Action.discard: Dropped,
    Action.reject: Refused,
    Action.accept: Accepted,
}


@pytest.mark.parametrize(("action", "decision"), DECIDES.items())
def test_per_member_moderation_action(
    session: Session, mlist: MailingList, action: Action, decision: type[ListOutcome]
):
    members.add(session, mlist, "mia@example.com", moderation_action=action)
    out = post(session, mlist, "mia@example.com")
    assert isinstance(out, decision)
    assert rules(out) == [MEMBER_MODERATION]
    assert "mia@example.com" in out.reasons[0].text
    if isinstance(out, Accepted):
        assert "mia@example.com" in out.members
    else:
        assert decision is not Accepted  # nobody gets the post
    if isinstance(out, Refused):
        assert Reply.coded(out.reply) == REFUSED_BY_RULE
        assert MEMBER_MODERATION in out.reply.text
        assert mlist.fqdn_listname in out.reply.text
    else:
        assert decision is not Refused


def test_per_member_action_on_one_list_only(session: Session, mlist: MailingList):
    other = lists.create(session, f"{unique('other')}@{HOST}")
    members.add(session, other, "anne@example.com", moderation_action=Action.hold)
    assert isinstance(post(session, other, "anne@example.com"), Held)
    assert isinstance(post(session, mlist, "anne@example.com"), Accepted)


def test_list_default_member_action(session: Session, mlist: MailingList):
    mlist.default_member_action = Action.hold
    session.flush()
    out = post(session, mlist, "anne@example.com")
    assert isinstance(out, Held)
    assert rules(out) == [MEMBER_MODERATION]
    # A member's own action wins over the list default.
    members.get(
        session, mlist, "bob@example.com", MemberRole.member
    ).moderation_action = Action.accept
    session.flush()
    assert isinstance(post(session, mlist, "bob@example.com"), Accepted)


@pytest.mark.parametrize("sender", ["olive@example.com", "mod@example.com"])
def test_owners_and_moderators_are_not_moderated(session: Session, mlist: MailingList, sender: str):
    mlist.default_member_action = Action.hold
    mlist.default_nonmember_action = Action.reject
    session.flush()
    out = post(session, mlist, sender)
    assert isinstance(out, Accepted)
    assert out.reasons == ()


def test_announce_list(session: Session):
    domains.create(session, HOST)
    news = lists.create(session, f"news@{HOST}", style_name="legacy-announce")
    members.add(session, news, "anne@example.com")
    members.add(session, news, "olive@example.com", MemberRole.owner)
    assert isinstance(post(session, news, "olive@example.com"), Accepted)
    assert isinstance(post(session, news, "anne@example.com"), Held)
    out = post(session, news, "stranger@example.net")
    assert isinstance(out, Refused)
    assert Reply.coded(out.reply) == REFUSED_BY_RULE


# --- nonmembers ---------------------------------------------------------------------------
def test_nonmember_is_held_by_default(session: Session, mlist: MailingList):
    out = post(session, mlist, "stranger@example.net")
    assert isinstance(out, Held)
    assert rules(out) == [NONMEMBER_MODERATION]
    assert "stranger@example.net" in out.reasons[0].text
    assert mlist.fqdn_listname in out.reasons[0].text
    assert not isinstance(out, Accepted | Refused)  # nobody gets it, no reply


def test_post_without_from_is_refused(session: Session, mlist: MailingList):
    # Even when the envelope sender is a member: membership is decided from From: only.
    out = post(session, mlist, None, mail_from="anne@example.com")
    assert isinstance(out, Refused)
    assert rules(out) == ["no-senders"]
    assert "From:" in out.reply.text


def test_membership_is_decided_from_the_from_header_only(session: Session, mlist: MailingList):
    out = post(
        session,
        mlist,
        "stranger@example.net",
        headers={"Reply-To": "anne@example.com", "Sender": "anne@example.com"},
        mail_from="anne@example.com",
    )
    assert isinstance(out, Held)
    assert rules(out) == [NONMEMBER_MODERATION]


@pytest.mark.parametrize(
    ("default", "decision"),
    [
        *((a, DECIDES[a]) for a in (Action.accept, Action.reject, Action.discard)),
        (Action.defer, Accepted),
    ],
)
def test_default_nonmember_action(
    session: Session, mlist: MailingList, default: Action, decision: type[ListOutcome]
):
    mlist.default_nonmember_action = default
    session.flush()
    assert isinstance(post(session, mlist, "stranger@example.net"), decision)


@pytest.mark.parametrize(
    ("action", "decision"),
    [(Action.accept, Accepted), (Action.discard, Dropped)],
)
def test_explicit_nonmember_action(
    session: Session, mlist: MailingList, action: Action, decision: type[ListOutcome]
):
    members.add(session, mlist, "known@example.net", MemberRole.nonmember, moderation_action=action)
    assert isinstance(post(session, mlist, "known@example.net"), decision)
    assert isinstance(post(session, mlist, "stranger@example.net"), Held)


def test_nonmember_record_without_action_uses_the_list_default(
    session: Session, mlist: MailingList
):
    members.add(session, mlist, "known@example.net", MemberRole.nonmember)
    mlist.default_nonmember_action = Action.discard
    session.flush()
    assert isinstance(post(session, mlist, "known@example.net"), Dropped)


def test_explicit_nonmember_action_beats_the_legacy_lists(session: Session, mlist: MailingList):
    members.add(
        session, mlist, "known@example.net", MemberRole.nonmember, moderation_action=Action.accept
    )
    mlist.reject_these_nonmembers = ["known@example.net"]
    session.flush()
    assert isinstance(post(session, mlist, "known@example.net"), Accepted)


#: Mailman's four legacy nonmember lists and what a sender on each gets
LEGACY_LISTS = [
    ("accept_these_nonmembers", Accepted),
    ("hold_these_nonmembers", Held),
    ("reject_these_nonmembers", Refused),
    ("discard_these_nonmembers", Dropped),
]


@pytest.mark.parametrize(("attribute", "decision"), LEGACY_LISTS)
def test_legacy_lists_exact_address(
    session: Session, mlist: MailingList, attribute: str, decision: type[ListOutcome]
):
    # A default that none of the four gives, so that the legacy list is what decided.
    mlist.default_nonmember_action = Action.accept if decision is not Accepted else Action.hold
    setattr(mlist, attribute, ["Friend@Example.NET"])
    session.flush()
    assert isinstance(post(session, mlist, "friend@example.net"), decision)
    other = post(session, mlist, "other@example.net")
    assert isinstance(other, Accepted if decision is not Accepted else Held)


@pytest.mark.parametrize(("attribute", "decision"), LEGACY_LISTS)
def test_legacy_lists_regex(
    session: Session, mlist: MailingList, attribute: str, decision: type[ListOutcome]
):
    mlist.default_nonmember_action = Action.accept if decision is not Accepted else Action.hold
    # Patterns match case-insensitively (the sender is lower-cased, the pattern is not).
    setattr(mlist, attribute, [r"^.*@Friends\.EXAMPLE$"])
    session.flush()
    assert isinstance(post(session, mlist, "anyone@friends.example"), decision)
    # re.match anchors at the start only; the pattern's $ anchors the end.
    assert not isinstance(post(session, mlist, "anyone@friends.example.evil"), decision)


def test_legacy_accept_match_means_go_on(session: Session, mlist: MailingList):
    """An accept_these_nonmembers hit wins over the later legacy lists and the default."""
    mlist.accept_these_nonmembers = ["^friend@"]
    mlist.reject_these_nonmembers = ["friend@example.net"]
    mlist.default_nonmember_action = Action.discard
    session.flush()
    out = post(session, mlist, "friend@example.net")
    assert isinstance(out, Accepted)
    assert out.reasons == ()
    assert out.members == ("anne@example.com", "bob@example.com")


def test_legacy_list_order_hold_before_reject(session: Session, mlist: MailingList):
    mlist.hold_these_nonmembers = ["^x@"]
    mlist.reject_these_nonmembers = ["x@example.net"]
    session.flush()
    assert isinstance(post(session, mlist, "x@example.net"), Held)


def test_bad_regex_is_skipped(session: Session, mlist: MailingList):
    mlist.default_nonmember_action = Action.accept
    mlist.reject_these_nonmembers = ["^(unclosed", "^bad@"]
    session.flush()
    assert isinstance(post(session, mlist, "bad@example.net"), Refused)
    assert isinstance(post(session, mlist, "good@example.net"), Accepted)


def test_legacy_lists_do_not_apply_to_members(session: Session, mlist: MailingList):
    mlist.discard_these_nonmembers = ["anne@example.com"]
    session.flush()
    assert isinstance(post(session, mlist, "anne@example.com"), Accepted)


# --- loop ---------------------------------------------------------------------------------
def test_loop_is_discarded_even_from_a_member(session: Session, mlist: MailingList):
    came_back = {"List-Post": f"<mailto:{mlist.fqdn_listname.upper()}>"}
    out = post(session, mlist, "anne@example.com", headers=came_back)
    assert isinstance(out, Dropped)  # nobody gets it
    assert rules(out) == [LOOP]


def test_loop_runs_before_moderation(session: Session, mlist: MailingList):
    came_back = {"List-Post": f" <mailto:{mlist.fqdn_listname}> "}
    out = post(session, mlist, "stranger@example.net", headers=came_back)
    assert isinstance(out, Dropped)
    assert rules(out) == [LOOP]


def test_another_lists_list_post_is_not_a_loop(session: Session, mlist: MailingList):
    out = post(
        session, mlist, "anne@example.com", headers={"List-Post": "<mailto:other@lists.test>"}
    )
    assert isinstance(out, Accepted)
    assert out.reasons == ()


def test_process_decides_from_the_snapshot_alone(session: Session, mlist: MailingList):
    """process() does no I/O: what changed after the snapshot was taken does not count."""
    snap = load(session, mlist)
    members.add(session, mlist, "carol@example.com")
    session.flush()
    raw = make_post("carol@example.com", mlist.fqdn_listname)
    out = pipeline.process(snap, Envelope(), Post(raw), mlist.fqdn_listname)
    assert isinstance(out, Held)
    assert isinstance(post(session, mlist, "carol@example.com"), Accepted)


def test_snapshot_contents(session: Session, mlist: MailingList):
    snap = load(session, mlist)
    assert snap.pk == mlist.id
    assert snap.mlist.list_id == mlist.list_id
    assert snap.staff == ("mod@example.com", "olive@example.com")
    assert [r.email for r in snap.regular] == ["anne@example.com", "bob@example.com"]
    assert dict(snap.roles_of("olive@example.com")) == {MemberRole.owner: None}
    assert dict(snap.roles_of("nobody@example.com")) == {}
