"""H2: the moderator password (``Approved:``/``Urgent:``) costs at most one hash check per
post, only after the cheap refusals, whatever the post carries.  The checks are counted
(never timed): ``PASSWORDS.verify`` is replaced by a counter."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mtaplugin import passwords
from mtaplugin.engine import ListEngine
from mtaplugin.enums import Action
from mtaplugin.frontends.common import crlf, decide_one
from mtaplugin.posting.rules.bans import BANNED_ADDRESS
from mtaplugin.posting.rules.base import RecentPosts, SitePolicy
from mtaplugin.posting.rules.headers import HEADER_MATCH
from mtaplugin.posting.rules.limits import NONMEMBER_LARGE_LIST, SENDER_RATE
from mtaplugin.posting.rules.moderation import NONMEMBER_MODERATION
from mtaplugin.posting.verdict import Accepted, Deferred, Held, Refused
from mtaplugin.vocabulary.bans import BanList
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.vocabulary.snapshot import HeaderRule
from tests.helpers import make_post
from tests.unit.sites import Site
from tests.unit.test_rules import decide, new_list, raw, snap

#: one real hash of the password (argon2 is slow: made once)
HASHED = passwords.hash_password("s3cret")
STRANGER = "stranger@example.net"


def flood(value: str = "x", n: int = 10_000, header: str = "Approved", **kw: Any) -> bytes:
    """A nonmember's post with ``n`` lines ``header: value`` at the top."""
    post = raw(STRANGER, **kw)
    return f"{header}: {value}\r\n".encode() * n + post


def password_list(**settings: Any):
    return snap(new_list(moderator_password=HASHED, **settings))


def test_ten_thousand_approved_lines_cost_at_most_one_check(checks: list[str]):
    outcome = decide(flood(), password_list())
    assert isinstance(outcome, Held)
    assert [r.rule for r in outcome.reasons] == [NONMEMBER_MODERATION]
    assert len(checks) <= 1


def test_every_header_of_the_family_together_costs_one_check(checks: list[str]):
    message = b"".join(
        f"{h}: guess{n}\r\n".encode()
        for n in range(2_000)
        for h in ("Approved", "Approve", "X-Approved", "X-Approve", "Urgent")
    )
    outcome = decide(message + raw(STRANGER), password_list())
    assert isinstance(outcome, Held)
    assert checks == ["guess0"]  # the first Urgent: value is checked only if it comes first


def test_the_first_value_is_the_one_checked_and_approves(checks: list[str]):
    message = b"Approved: s3cret\r\n" + b"Approved: x\r\n" * 500 + raw(STRANGER)
    outcome = decide(message, password_list())
    assert isinstance(outcome, Accepted)
    assert [r.rule for r in outcome.reasons] == ["moderator-password"]
    assert checks == ["s3cret"]


def test_a_right_password_after_the_first_value_is_never_checked(checks: list[str]):
    message = b"Approved: x\r\n" + b"Approved: s3cret\r\n" + raw(STRANGER)
    assert isinstance(decide(message, password_list()), Held)
    assert checks == ["x"]


def test_a_value_longer_than_any_password_is_not_hashed(checks: list[str]):
    message = f"Approved: {'x' * (passwords.MAX_LENGTH + 1)}\r\n".encode() + raw(STRANGER)
    assert isinstance(decide(message, password_list()), Held)
    assert checks == []


def test_a_list_without_a_password_hashes_nothing(checks: list[str]):
    assert isinstance(decide(flood(), snap()), Held)
    assert checks == []


@pytest.mark.parametrize(
    ("cheap", "rule"),
    [
        pytest.param({"bans": BanList.of(["stranger@example.net"])}, BANNED_ADDRESS, id="ban"),
        pytest.param(
            {
                "header_matches": (
                    HeaderRule("subject", re.compile("buy now", re.I), Action.reject, "buy"),
                )
            },
            HEADER_MATCH,
            id="header-match",
        ),
    ],
)
def test_a_refused_stranger_costs_no_check(checks: list[str], cheap: dict[str, Any], rule: str):
    outcome = decide(flood(subject="Buy now"), snap(new_list(moderator_password=HASHED), **cheap))
    assert isinstance(outcome, Refused) and outcome.rule == rule
    assert checks == []


def test_rate_limits_and_the_large_list_guard_come_before_any_check(checks: list[str]):
    over = decide(
        flood(),
        password_list(),
        site=SitePolicy(sender_posts_per_hour=5),
        recent=RecentPosts(sender=5),
    )
    assert isinstance(over, Deferred) and [r.rule for r in over.reasons] == [SENDER_RATE]
    large = decide(flood(), password_list(), site=SitePolicy(nonmember_posts_max_members=1))
    assert isinstance(large, Refused) and large.rule == NONMEMBER_LARGE_LIST
    assert checks == []


def test_the_same_post_decided_again_or_for_another_list_is_not_checked_again(
    checks: list[str],
):
    message = flood("guess")
    other = snap(new_list(moderator_password=passwords.hash_password("other")))
    for snapshot in (password_list(), other, password_list()):
        assert isinstance(decide(message, snapshot), Held)
    assert checks == ["guess"]


def test_once_the_right_password_was_seen_a_wrong_one_costs_no_hash(checks: list[str]):
    assert isinstance(decide(flood("s3cret", n=1), password_list()), Accepted)
    for n in range(5):
        assert isinstance(decide(flood(f"wrong{n}", n=1), password_list()), Held)
    assert isinstance(decide(flood("s3cret", n=2), password_list()), Accepted)
    assert checks == ["s3cret"]


def test_a_spent_budget_is_not_an_approval():
    from mtaplugin.posting import moderator_password

    assert moderator_password.BUDGETS.take(b"post")
    assert not moderator_password.matches(b"post", "s3cret", HASHED)


def test_urgent_with_the_password_and_approved_cost_one_check(checks: list[str]):
    message = b"Urgent: s3cret\r\nApproved: s3cret\r\n" + raw(STRANGER)
    outcome = decide(message, password_list())
    assert isinstance(outcome, Accepted) and outcome.urgent
    assert checks == ["s3cret"]


# --- through the engine and the LMTP front end's per-recipient decisions -----------------
def test_the_lmtp_front_end_deciding_each_list_checks_once(site: Site, checks: list[str]):
    """Two lists in one transaction, each decided on its own (as the LMTP front end does),
    then the whole transaction again (the milter), each list with its own password."""
    site.update("team", moderator_password=HASHED)
    with site.sessions.begin() as s:
        from mtaplugin.manage import lists

        other = lists.create(s, site.addr("other"))
        other.moderator_password = passwords.hash_password("other")
    engine = ListEngine(site.sessions)
    message = crlf(b"Approved: guess\n" * 10_000 + make_post(STRANGER, site.address))
    rcpts = [f"<{site.address}>", f"<{site.addr('other')}>"]
    base = Envelope(mail_from=f"<{STRANGER}>")
    for rcpt in rcpts:
        assert decide_one(engine, base, rcpt, message).what == "held for moderation"
    engine.decide(Envelope(mail_from=STRANGER, recipients=rcpts), message)
    assert checks == ["guess"]
    assert len(site.held("team")) == 2


def test_a_moderation_reply_with_ten_thousand_approved_lines_checks_once(
    site: Site, checks: list[str]
):
    from tests.unit.test_commands import _hold

    site.update(moderator_password=HASHED)
    engine = ListEngine(site.sessions, site_owner="postmaster@site.test")
    _held, token = _hold(engine, site)
    reply = b"Approved: guess\n" * 10_000 + make_post(
        STRANGER, site.addr(f"team-confirm+{token}"), body="Approved: guess2\n"
    )
    confirm = f"<{site.addr(f'team-confirm+{token}')}>"
    engine.decide(Envelope(mail_from=STRANGER, recipients=[confirm]), reply)
    assert checks == ["guess"]
