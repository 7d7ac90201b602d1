"""The rule chain compiled once per list version (:mod:`mtaplugin.posting.chain`):

- it gives the verdicts and reasons the whole table gives, on a table of lists and posts;
- a rule whose setting is off is left out of the chain and never called.

(The chain following the list's versions: tests/unit/test_rule_chain_versions.py.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtaplugin import passwords
from mtaplugin.enums import Action, DMARCMitigateAction, MemberRole, NewsgroupModeration
from mtaplugin.mailauth.identity import SenderIdentity
from mtaplugin.posting import chain, pipeline
from mtaplugin.posting.rules import (
    administrivia,
    approved,
    authentication,
    bans,
    destination,
    dmarc,
    emergency,
    headers,
    limits,
    loop,
    news,
    recipients,
    size,
)
from mtaplugin.posting.rules.base import Hit, PostContext, RecentPosts, Rule, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.regexes import compile_pattern
from mtaplugin.vocabulary.bans import BanList
from mtaplugin.vocabulary.envelope import Envelope, Post
from mtaplugin.vocabulary.snapshot import HeaderRule
from tests.helpers import snapshot_of
from tests.unit.transforms.util import make_list

LIST = "team@lists.example.org"
ANN = "ann@example.com"
OLIVE = "olive@example.com"
STRANGER = "eve@example.net"


@pytest.fixture(autouse=True)
def _fresh_chains() -> Iterator[None]:
    chain.forget()
    yield
    chain.forget()


def raw(
    sender: str = ANN,
    subject: str = "Design notes",
    to: str = LIST,
    body: str = "Hello, here are my notes.\n",
    extra: dict[str, str] | None = None,
) -> bytes:
    lines = [f"From: {sender}"] if sender else []
    lines += [f"To: {to}", f"Subject: {subject}", "Message-ID: <1@x>"]
    lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n" + body.replace("\n", "\r\n")).encode()


def snap(**settings: Any) -> ListSnapshot:
    extra = {k: settings.pop(k) for k in ("bans", "header_matches") if k in settings}
    roles = {ANN: {MemberRole.member: None}, OLIVE: {MemberRole.owner: None}}
    return snapshot_of(make_list(**settings), roles, (ANN, "bob@example.com"), **extra)


def context(snapshot: ListSnapshot, message: bytes, site: SitePolicy, **kw: Any) -> PostContext:
    post = Post(message)
    sender = post.from_address
    return PostContext(
        mlist=snapshot.mlist,
        post=post,
        envelope=Envelope(mail_from=sender, recipients=[f"<{LIST}>"]),
        sender=sender,
        roles=dict(snapshot.roles_of(sender)) if sender else {},
        identity=kw.pop("identity", None) or SenderIdentity(sender),
        snapshot=snapshot,
        site=site,
        recipient=f"<{LIST}>",
        **kw,
    )


HASHED = passwords.hash_password("s3cret")
SPAM = HeaderRule("x-spam-flag", compile_pattern("yes"), Action.reject, "X-Spam-Flag: yes")
HOLD_ME = HeaderRule("subject", compile_pattern("viagra"), None, "Subject: viagra")
RATES = SitePolicy(sender_posts_per_hour=3, list_posts_per_hour=5, nonmember_posts_max_members=1)
CHECKS = SitePolicy(header_checks=(("X-Spam-Status", compile_pattern(r"^Yes")),))
OWNER = SenderIdentity(OLIVE, ("dkim:example.com",))

#: (name, list settings, post, site policy, context extras)
CASES: list[tuple[str, dict[str, Any], bytes, SitePolicy, dict[str, Any]]] = [
    ("member", {}, raw(), SitePolicy(), {}),
    ("member, every rule off", {"administrivia": False, "max_message_size": 0}, raw(), RATES, {}),
    ("nonmember held", {}, raw(STRANGER), SitePolicy(), {}),
    (
        "nonmember rejected",
        {"default_nonmember_action": Action.reject},
        raw(STRANGER),
        SitePolicy(),
        {},
    ),
    (
        "nonmember accepted by the legacy list",
        {"accept_these_nonmembers": ["^eve@.*"], "default_nonmember_action": Action.reject},
        raw(STRANGER),
        SitePolicy(),
        {},
    ),
    ("no From:", {}, raw(""), SitePolicy(), {}),
    ("banned exactly", {"bans": BanList.of([ANN])}, raw(), SitePolicy(), {}),
    ("banned by regex", {"bans": BanList.of([r"^.*@example\.com$"])}, raw(), SitePolicy(), {}),
    ("not banned", {"bans": BanList.of(["other@example.com"])}, raw(), SitePolicy(), {}),
    ("oversized", {"max_message_size": 1}, raw(body="x" * 2000), SitePolicy(), {}),
    ("administrivia subject", {}, raw(subject="unsubscribe"), SitePolicy(), {}),
    ("administrivia body", {}, raw(body="\nsubscribe me\n"), SitePolicy(), {}),
    ("administrivia off", {"administrivia": False}, raw(subject="help"), SitePolicy(), {}),
    ("implicit destination", {}, raw(to="someone@else.test"), SitePolicy(), {}),
    (
        "an alias names the list",
        {"acceptable_aliases": ["Team@Old.Example.org"]},
        raw(to="team@old.example.org"),
        SitePolicy(),
        {},
    ),
    (
        "a regex alias names the list",
        {"acceptable_aliases": [r"^team@.*\.example\.org$", "^[broken"]},
        raw(to="team@new.example.org"),
        SitePolicy(),
        {},
    ),
    (
        "resent to the list",
        {},
        raw(to="someone@else.test", extra={"Resent-To": f"Team <{LIST}>"}),
        SitePolicy(),
        {},
    ),
    (
        "resent elsewhere",
        {},
        raw(to=LIST, extra={"Resent-Cc": "other@else.test"}),
        SitePolicy(),
        {},
    ),
    ("urgent from an owner", {}, raw(OLIVE, extra={"urgent": "yes"}), SitePolicy(), {}),
    ("too many recipients", {"max_num_recipients": 2}, raw(to=f"{LIST}, a@b.c"), SitePolicy(), {}),
    ("no subject", {}, raw(subject=""), SitePolicy(), {}),
    ("emergency", {"emergency": True}, raw(), SitePolicy(), {}),
    (
        "header match rejects",
        {"header_matches": (SPAM, HOLD_ME)},
        raw(extra={"X-Spam-Flag": "YES"}),
        SitePolicy(),
        {},
    ),
    (
        "header match holds",
        {"header_matches": (SPAM, HOLD_ME)},
        raw(subject="viagra"),
        CHECKS,
        {},
    ),
    ("site header check", {}, raw(extra={"X-Spam-Status": "Yes, 9"}), CHECKS, {}),
    (
        "suspicious header",
        {"bounce_matching_headers": "# comment\nX-Mailer: ^bulk\nbroken\nSubject: [x"},
        raw(extra={"X-Mailer": "bulk mailer 2"}),
        SitePolicy(),
        {},
    ),
    ("loop", {}, raw(extra={"List-Post": f"<mailto:{LIST.upper()}>"}), SitePolicy(), {}),
    ("sender rate", {}, raw(), RATES, {"recent": RecentPosts(sender=3)}),
    ("list rate", {}, raw(), RATES, {"recent": RecentPosts(list=9)}),
    ("nonmember on a large list", {}, raw(STRANGER), RATES, {}),
    ("approved by an owner", {}, raw(OLIVE, extra={"Approved": "yes"}), SitePolicy(), {}),
    (
        "approved, not authenticated",
        {},
        raw(OLIVE, extra={"Approved": "yes"}),
        SitePolicy(),
        {"identity": SenderIdentity(OLIVE)},
    ),
    ("urgent without the password", {}, raw(extra={"Urgent": "now"}), SitePolicy(), {}),
    (
        "moderator password",
        {"moderator_password": HASHED, "default_nonmember_action": Action.reject},
        raw(STRANGER, extra={"Approved": "s3cret"}),
        SitePolicy(),
        {},
    ),
    (
        "unauthenticated member",
        {"require_authenticated_senders": True},
        raw(),
        SitePolicy(),
        {},
    ),
    (
        "moderated newsgroup",
        {
            "newsgroup_moderation": NewsgroupModeration.moderated,
            "gateway_to_news": True,
            "linked_newsgroup": "comp.test",
        },
        raw(),
        SitePolicy(),
        {},
    ),
    (
        "dmarc reject",
        {"dmarc_mitigate_action": DMARCMitigateAction.reject, "dmarc_addresses": [ANN]},
        raw(),
        SitePolicy(),
        {},
    ),
    ("moderated member", {"default_member_action": Action.hold}, raw(), SitePolicy(), {}),
]


def walk(
    rules: tuple[Rule, ...],
    snapshot: ListSnapshot,
    message: bytes,
    site: SitePolicy,
    extras: dict[str, Any],
) -> tuple[Hit | None, list[Hit]]:
    extras = {
        **extras,
        "identity": extras.get("identity", OWNER if OLIVE in str(message) else None),
    }
    return pipeline.run_rules(context(snapshot, message, site, **extras), rules)


@pytest.mark.parametrize(
    ("settings_", "message", "site", "extras"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_compiled_chain_gives_the_whole_tables_verdicts(
    settings_: dict[str, Any], message: bytes, site: SitePolicy, extras: dict[str, Any]
) -> None:
    snapshot = snap(**settings_)
    compiled = chain.compiled(pipeline.POSTING_RULES, snapshot, site)
    every = walk(pipeline.POSTING_RULES, snapshot, message, site, extras)
    assert walk(compiled, snapshot, message, site, extras) == every
    # and the compiled chain is the table's order, without some of its rules
    ids = [r.id for r in pipeline.POSTING_RULES]
    kept = [r.id for r in compiled]
    assert kept == [i for i in ids if i in kept]


def test_the_cases_reach_every_rule() -> None:
    """The table above makes every rule of the chain hit at least once."""
    seen: set[str] = set()
    for _name, settings_, message, site, extras in CASES:
        snapshot = snap(**settings_)
        _deciding, hits = walk(pipeline.POSTING_RULES, snapshot, message, site, extras)
        seen |= {h.rule for h in hits}
    assert seen == {r.id for r in pipeline.POSTING_RULES}


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([c[1] for c in CASES]),
    st.sampled_from([c[1] for c in CASES]),
    st.sampled_from([c[2] for c in CASES]),
    st.sampled_from([SitePolicy(), RATES, CHECKS]),
)
def test_any_list_with_any_post(
    one: dict[str, Any], other: dict[str, Any], message: bytes, site: SitePolicy
) -> None:
    """Settings of two cases together, any post of the table: the same verdicts."""
    snapshot = snap(**{**one, **other})
    compiled = chain.compiled(pipeline.POSTING_RULES, snapshot, site)
    extras = {"recent": RecentPosts(sender=9, list=9)}
    if "moderator_password" in one or "moderator_password" in other:
        return  # (argon2 at full cost: the case above covers it)
    every = walk(pipeline.POSTING_RULES, snapshot, message, site, extras)
    assert walk(compiled, snapshot, message, site, extras) == every


# --- a rule whose setting is off is not called -----------------------------------------
#: rule → (its module, the function its prepared check calls)
CALLED: dict[str, tuple[Any, str]] = {
    "dmarc-mitigation": (dmarc, "dmarc_mitigation"),
    "banned-address": (bans, "_banned"),
    "header-match": (headers, "header_match"),
    "sender-rate": (limits, "sender_rate"),
    "list-rate": (limits, "list_rate"),
    "nonmember-large-list": (limits, "nonmember_large_list"),
    "moderator-password": (approved, "moderator_password"),
    "emergency": (emergency, "emergency"),
    "unauthenticated-sender": (authentication, "unauthenticated_sender"),
    "news-moderation": (news, "news_moderation"),
    "administrivia": (administrivia, "_commands"),
    "implicit-destination": (destination, "_named"),
    "max-recipients": (recipients, "_too_many"),
    "max-size": (size, "_over"),
    "suspicious-header": (headers, "_suspicious"),
    "loop": (loop, "_loop"),
}

#: list settings that turn every rule of CALLED on (loop is always on)
ALL_ON: dict[str, Any] = {
    "dmarc_mitigate_action": DMARCMitigateAction.reject,
    "bans": BanList.of(["nobody@example.org"]),
    "header_matches": (SPAM,),
    "moderator_password": HASHED,
    "emergency": True,
    "require_authenticated_senders": True,
    "newsgroup_moderation": NewsgroupModeration.moderated,
    "gateway_to_news": True,
    "linked_newsgroup": "comp.test",
    "bounce_matching_headers": "X-Mailer: bulk",
}
ALL_OFF: dict[str, Any] = {
    "administrivia": False,
    "require_explicit_destination": False,
    "max_num_recipients": 0,
    "max_message_size": 0,
}


def spy_on(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    called: list[str] = []
    for rule, (module, name) in CALLED.items():
        real: Callable[..., Hit | None] = getattr(module, name)

        def spy(*args: Any, _rule: str = rule) -> Hit | None:
            called.append(_rule)
            return None  # (so that every rule of the chain runs)

        assert callable(real)
        monkeypatch.setattr(module, name, spy)
    return called


def decide(snapshot: ListSnapshot, site: SitePolicy) -> None:
    post = Post(raw())
    env = Envelope(mail_from=ANN, recipients=[f"<{LIST}>"])
    pipeline.process(snapshot, env, post, f"<{LIST}>", site=site, recent=RecentPosts(9, 9))


def test_a_rule_whose_setting_is_off_is_never_called(monkeypatch: pytest.MonkeyPatch) -> None:
    called = spy_on(monkeypatch)
    decide(snap(**ALL_OFF), SitePolicy())
    assert called == ["loop"]
    kept = [r.id for r in chain.compiled(pipeline.POSTING_RULES, snap(**ALL_OFF), SitePolicy())]
    assert not set(kept) & (set(CALLED) - {"loop"})


def test_each_rule_is_called_when_its_setting_is_on(monkeypatch: pytest.MonkeyPatch) -> None:
    called = spy_on(monkeypatch)
    decide(snap(**{**ALL_ON, "max_message_size": 1, "dmarc_addresses": []}), RATES)
    # in the table's order
    assert called == [r.id for r in pipeline.POSTING_RULES if r.id in CALLED]


@pytest.mark.parametrize(
    ("to", "extra", "hits"),
    [
        ("someone@else.test", {}, True),
        (LIST, {}, False),
        ("someone@else.test", {"Resent-To": f"Team <{LIST}>"}, False),
        ("someone@else.test", {"resent-cc": LIST.upper()}, False),
        ("someone@else.test", {"Resent-Cc": "other@else.test"}, True),
    ],
)
def test_implicit_destination_reads_the_resent_fields_too(
    to: str, extra: dict[str, str], hits: bool
) -> None:
    """To: and Cc: alone when the post has no Resent-To:/Resent-Cc: (parsed once with
    max-recipients), all four when it has."""
    snapshot = snap()
    for rules in (pipeline.POSTING_RULES, chain.compiled(pipeline.POSTING_RULES, snapshot, RATES)):
        _deciding, found = walk(rules, snapshot, raw(to=to, extra=extra), RATES, {})
        assert ("implicit-destination" in [h.rule for h in found]) is hits
