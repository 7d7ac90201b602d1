"""The twins merged: one pending-request store (with the site's lifetimes and a clock),
one ban matcher, one password context."""

from __future__ import annotations

from datetime import timedelta

import pytest
from passlib.hash import bcrypt, pbkdf2_sha256, sha512_crypt
from sqlalchemy import select

from mtaplugin import config, passwords
from mtaplugin.clock import ManualClock
from mtaplugin.enums import RequestType, SubscriptionPolicy, TokenOwner
from mtaplugin.errors import NotFound
from mtaplugin.manage import bans, pending, subscriptions, users
from mtaplugin.manage.subscriptions import Status, WorkflowSettings
from mtaplugin.model import PendingRequest, User
from mtaplugin.vocabulary.bans import BanList
from tests.helpers import unique
from tests.unit.dbutil import pending_request


def test_a_request_lives_as_long_as_the_site_says_by_the_clock(txn_session, mlist):
    clock = ManualClock()
    settings = config.load(environ={"MTAPLUGIN_RULES_PENDING_REQUEST_LIFE": "3600"})
    workflow = WorkflowSettings.from_settings(settings, clock)
    assert workflow.pending_life == timedelta(hours=1)
    status, token = subscriptions.request_subscription(
        txn_session, mlist, "ann@example.net", settings=workflow
    )
    assert status is Status.pending_confirmation and token is not None
    request = subscriptions.get_pending(txn_session, token, mlist, workflow)
    assert request.created_at == clock.now
    assert request.expires_at == clock.now + timedelta(hours=1)
    clock.advance(minutes=59)
    assert pending.find(txn_session, token, clock()) is not None
    clock.advance(minutes=2)
    with pytest.raises(NotFound):
        subscriptions.confirm(txn_session, mlist, token, settings=workflow)
    assert txn_session.scalar(select(PendingRequest).where(PendingRequest.token == token)) is None


def test_expire_removes_what_the_clock_says_is_over(txn_session, mlist):
    clock = ManualClock()
    s, kind = txn_session, RequestType
    two_days, an_hour = timedelta(days=2), timedelta(hours=1)
    kept = pending_request(
        s, kind.subscription, "a@x.net", clock(), two_days, mailing_list_id=mlist.id
    )
    gone = pending_request(s, kind.password_reset, "b@example.net", clock(), an_hour)
    clock.advance(hours=2)
    assert pending.expire(txn_session, clock()) >= 1
    assert txn_session.get(PendingRequest, kept.id) is not None
    assert txn_session.scalar(select(PendingRequest).where(PendingRequest.id == gone.id)) is None


def test_the_moderators_step_gets_the_moderators_lifetime(txn_session, mlist):
    clock = ManualClock()
    mlist.subscription_policy = SubscriptionPolicy.moderate
    workflow = WorkflowSettings(moderator_life=timedelta(days=9), clock=clock)
    status, token = subscriptions.request_subscription(
        txn_session, mlist, "cy@example.net", pre_verified=True, settings=workflow
    )
    assert status is Status.pending_approval and token is not None
    request = subscriptions.get_pending(txn_session, token, mlist, workflow)
    assert request.token_owner is TokenOwner.moderator
    assert request.expires_at - request.created_at == timedelta(days=9)


def test_a_ban_is_a_regex_only_when_it_starts_with_a_caret(txn_session, mlist):
    bans.add(txn_session, mlist, "a.b@example.net")
    bans.add(txn_session, None, "^.*@spam\\.example$")
    for email, banned in [
        ("a.b@example.net", True),
        ("A.B@Example.NET", True),
        ("axb@example.net", False),  # the dot of an address is not a wildcard
        ("eve@spam.example", True),
        ("eve@spam.example.org", False),
    ]:
        assert bans.is_banned(txn_session, mlist, email.lower()) is banned, email
        # the posting snapshot's matcher agrees
        assert BanList.of(["a.b@example.net", "^.*@spam\\.example$"]).matches(email) is banned


@pytest.mark.parametrize("scheme", [bcrypt, sha512_crypt, pbkdf2_sha256])
def test_hashes_of_every_scheme_stored_so_far_still_log_in_and_are_renewed(
    txn_session, scheme, monkeypatch
):
    email = f"{unique('u')}@example.org"
    user = users.create(txn_session, email)
    user.password = scheme.hash("an old password")
    # Log-in is by a verified address (a Mailman 3 import carries its verified_on over)
    for address in user.addresses:
        address.verified_on = address.registered_on
    txn_session.flush()
    assert users.authenticate(txn_session, "ip", email, "an old password") is user
    assert user.password.startswith("$argon2")
    assert passwords.verify("an old password", user.password)
    assert users.authenticate(txn_session, "ip", email, "wrong") is None


def test_one_password_context_for_users_and_the_moderator_password():
    hashed = passwords.hash_password("s3cret")
    assert hashed.startswith("$argon2") and passwords.verify("s3cret", hashed)
    assert not passwords.verify("s3cret", "not a hash") and not passwords.verify("", hashed)
    with pytest.raises(Exception, match="at least 8"):
        users.hash_password("short", users.MIN_PASSWORD)
    assert users.check_password(User(password=hashed), "s3cret") is True
