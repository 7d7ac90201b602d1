"""manage/subscriptions/: the (un)subscription state machines REST and mail share."""

from __future__ import annotations

import email
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import RequestType, SubscriptionPolicy, TokenOwner
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.manage import members
from mtaplugin.manage import pending as pending_store
from mtaplugin.manage import subscriptions as subs
from mtaplugin.manage.subscriptions import Status, WorkflowSettings
from mtaplugin.manage.subscriptions.steps import Step, steps_for
from mtaplugin.model import Address, AuditEntry, Ban, MailingList, OutboxMessage, PendingRequest
from mtaplugin.model.base import utcnow

SETTINGS = WorkflowSettings(site_owner="postmaster@site.test")


def subjects_to(session: Session, mlist: MailingList, rcpt: str) -> list[str]:
    rows = session.scalars(
        select(OutboxMessage)
        .where(OutboxMessage.mailing_list_id == mlist.id)
        .order_by(OutboxMessage.id)
    ).all()
    return [str(email.message_from_bytes(r.raw)["Subject"]) for r in rows if rcpt in r.recipients]


def member(session: Session, mlist: MailingList, who: str) -> bool:
    return members.is_member(session, mlist, who)


def test_open_policy_subscribes_verified_addresses_at_once(txn_session, mlist):
    mlist.subscription_policy = SubscriptionPolicy.open
    mlist.admin_notify_mchanges = True
    status, token = subs.request_subscription(
        txn_session, mlist, "Ann@Example.net", pre_verified=True, settings=SETTINGS
    )
    assert (status, token) == (Status.subscribed, None)
    assert member(txn_session, mlist, "ann@example.net")
    assert any("Welcome" in s for s in subjects_to(txn_session, mlist, "ann@example.net"))
    assert any("joined" in s for s in subjects_to(txn_session, mlist, "owner@example.com"))
    audit = txn_session.scalars(
        select(AuditEntry).where(AuditEntry.mailing_list_id == mlist.id)
    ).all()
    assert [a.action for a in audit] == ["member.subscribe"]


def test_open_policy_still_verifies_an_unknown_address(txn_session, mlist):
    mlist.subscription_policy = SubscriptionPolicy.open
    status, token = subs.request_subscription(txn_session, mlist, "new@example.net")
    assert status is Status.pending_confirmation and token
    assert not member(txn_session, mlist, "new@example.net")


def test_a_subscriber_gets_a_user_as_in_mailman_even_while_pending(txn_session, mlist):
    """Mailman's workflow links every subscriber's address to a (password-less) user."""
    mlist.subscription_policy = SubscriptionPolicy.open
    subs.request_subscription(txn_session, mlist, "new@example.net", display_name="New")
    address = txn_session.scalar(select(Address).where(Address.email == "new@example.net"))
    assert address is not None and address.verified_on is None
    assert address.user is not None and address.user.password is None
    subs.request_subscription(txn_session, mlist, "direct@example.net", pre_verified=True)
    direct = txn_session.scalar(select(Address).where(Address.email == "direct@example.net"))
    assert direct is not None and direct.user is not None and direct.verified_on is not None
    added = subs.mass_subscribe(txn_session, mlist, [("mass@example.net", "Mass")])
    assert added.added == ("mass@example.net",)
    mass = txn_session.scalar(select(Address).where(Address.email == "mass@example.net"))
    assert mass is not None and mass.user is not None


def test_confirm_policy(txn_session, mlist):
    status, token = subs.request_subscription(txn_session, mlist, "bob@example.net")
    assert status is Status.pending_confirmation
    assert token is not None and len(token) == 40 and token == token.lower()
    pending = txn_session.scalar(select(PendingRequest).where(PendingRequest.token == token))
    assert pending is not None and pending.token_owner is TokenOwner.subscriber
    assert pending.expires_at - utcnow() > timedelta(days=2, hours=23)
    with pytest.raises(AlreadyExists, match="already pending"):
        subs.request_subscription(txn_session, mlist, "bob@example.net")
    assert subs.confirm(txn_session, mlist, token) == (Status.subscribed, None)
    assert member(txn_session, mlist, "bob@example.net")
    address = txn_session.scalar(select(Address).where(Address.email == "bob@example.net"))
    assert address is not None and address.verified_on is not None
    with pytest.raises(NotFound):
        subs.confirm(txn_session, mlist, token)  # single use


def test_confirm_then_moderate_rotates_the_token(txn_session, mlist):
    mlist.subscription_policy = SubscriptionPolicy.confirm_then_moderate
    _status, first = subs.request_subscription(txn_session, mlist, "cy@example.net")
    assert first is not None
    with pytest.raises(InvalidInput, match="confirmation first"):
        subs.moderate(txn_session, mlist, first, "accept", actor="owner@example.com")
    status, second = subs.confirm(txn_session, mlist, first, settings=SETTINGS)
    assert status is Status.pending_approval and second and second != first
    assert any("asks to join" in s for s in subjects_to(txn_session, mlist, "owner@example.com"))
    with pytest.raises(InvalidInput, match="waits for a moderator"):
        subs.confirm(txn_session, mlist, second)
    assert [p.token for p in subs.pending_requests(txn_session, mlist)] == [second]
    assert subs.moderate(txn_session, mlist, second, "approve", actor="owner@example.com") is (
        Status.subscribed
    )
    assert member(txn_session, mlist, "cy@example.net")


def test_moderator_rejects_with_a_reason(txn_session, mlist):
    mlist.subscription_policy = SubscriptionPolicy.moderate
    status, token = subs.request_subscription(
        txn_session, mlist, "dee@example.net", pre_verified=True
    )
    assert status is Status.pending_approval and token
    assert (
        subs.moderate(
            txn_session, mlist, token, "reject", actor="owner@example.com", reason="not staff"
        )
        is Status.refused
    )
    assert not member(txn_session, mlist, "dee@example.net")
    assert any("refused" in s for s in subjects_to(txn_session, mlist, "dee@example.net"))
    with pytest.raises(InvalidInput, match="unknown action"):
        subs.moderate(txn_session, mlist, token, "maybe", actor="x")


def test_pre_flags_skip_every_step(txn_session, mlist):
    mlist.subscription_policy = SubscriptionPolicy.confirm_then_moderate
    mlist.send_welcome_message = False
    assert subs.request_subscription(
        txn_session,
        mlist,
        "eve@example.net",
        pre_verified=True,
        pre_confirmed=True,
        pre_approved=True,
    ) == (Status.subscribed, None)
    assert subjects_to(txn_session, mlist, "eve@example.net") == []


def test_invitation_skips_moderation(txn_session, mlist):
    mlist.subscription_policy = SubscriptionPolicy.moderate
    status, token = subs.request_subscription(
        txn_session, mlist, "fay@example.net", invitation=True
    )
    assert status is Status.pending_confirmation and token
    assert any("invited" in s for s in subjects_to(txn_session, mlist, "fay@example.net"))
    assert subs.confirm(txn_session, mlist, token) == (Status.subscribed, None)


def test_refusals_change_nothing(txn_session, mlist):
    txn_session.add(Ban(email="bad@example.net", mailing_list_id=mlist.id))
    txn_session.add(Ban(email="^.*@spam\\.example$", is_regex=True))
    members.add(txn_session, mlist, "gus@example.net")
    txn_session.flush()
    before = txn_session.scalars(select(PendingRequest)).all()
    for who, error in [
        ("bad@example.net", "banned"),
        ("x@spam.example", "banned"),
        ("gus@example.net", "already a member"),
        (mlist.request_address, "own addresses"),
        ("not an address", "not an email address"),
    ]:
        with pytest.raises(InvalidInput, match=error):
            subs.request_subscription(txn_session, mlist, who)
    assert txn_session.scalars(select(PendingRequest)).all() == before


def test_unsubscription(txn_session, mlist):
    members.add(txn_session, mlist, "hal@example.net")
    status, token = subs.request_unsubscription(txn_session, mlist, "hal@example.net")
    assert status is Status.pending_confirmation and token
    assert subs.confirm(txn_session, mlist, token) == (Status.unsubscribed, None)
    assert not member(txn_session, mlist, "hal@example.net")
    assert any("left" in s for s in subjects_to(txn_session, mlist, "hal@example.net"))
    with pytest.raises(NotFound, match="not a member"):
        subs.request_unsubscription(txn_session, mlist, "hal@example.net")
    members.add(txn_session, mlist, "ida@example.net")
    assert subs.request_unsubscription(
        txn_session, mlist, "ida@example.net", pre_confirmed=True
    ) == (Status.unsubscribed, None)


def test_expired_requests_are_removed(txn_session, mlist):
    _status, token = subs.request_subscription(txn_session, mlist, "jo@example.net")
    pending = txn_session.scalar(select(PendingRequest).where(PendingRequest.token == token))
    assert pending is not None
    pending.expires_at = utcnow() - timedelta(seconds=1)
    txn_session.flush()
    assert subs.pending_requests(txn_session, mlist, RequestType.subscription) == []
    assert pending_store.expire(txn_session, utcnow()) >= 1
    assert txn_session.scalar(select(PendingRequest).where(PendingRequest.token == token)) is None


@pytest.mark.parametrize("policy", list(SubscriptionPolicy))
def test_must_confirm_asks_for_a_confirmation_even_when_the_caller_vouches(policy):
    """A requester who has not shown the address is theirs confirms first, whatever the
    caller's pre_confirmed says; the moderators' step stays as the policy and
    pre_approved say."""
    vouched = steps_for(policy, confirmed=True, approved=False, must_confirm=True)
    moderated = policy in (SubscriptionPolicy.moderate, SubscriptionPolicy.confirm_then_moderate)
    assert vouched == ((Step.confirm, Step.moderate) if moderated else (Step.confirm,))
    assert steps_for(policy, confirmed=True, approved=True, must_confirm=True) == (Step.confirm,)
