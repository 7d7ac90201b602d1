"""Every posting rule on its own, and the chain's order, without a database.

The list is an in-memory MailingList with the model's defaults; the snapshot is built by
hand, so each test states exactly the roles, bans and header matches it relies on.
"""

from __future__ import annotations

from typing import Any

import pytest

from mtaplugin import passwords
from mtaplugin.enums import Action, MemberRole
from mtaplugin.mailauth.identity import SenderIdentity
from mtaplugin.model import MailingList
from mtaplugin.posting import pipeline
from mtaplugin.posting.rules import (
    administrivia,
    approved,
    authentication,
    bans,
    destination,
    headers,
    loop,
    recipients,
    senders,
    size,
    subject,
)
from mtaplugin.posting.rules.base import PostContext, SitePolicy
from mtaplugin.posting.rules.moderation import NONMEMBER_MODERATION
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.verdict import Accepted, Held, Refused
from mtaplugin.regexes import compile_pattern
from mtaplugin.vocabulary.bans import BanList
from mtaplugin.vocabulary.envelope import Envelope, Post
from mtaplugin.vocabulary.snapshot import HeaderRule
from tests.helpers import detached_list, snapshot_of
from tests.replies import REFUSED_BY_RULE, Reply

LIST = "dev@example.org"


def new_list(**settings: Any) -> MailingList:
    names = {"list_name": "dev", "mail_host": "example.org", "list_id": "dev.example.org"}
    return detached_list(id=1, **{**names, **settings})


def snap(
    mlist: MailingList | None = None,
    roles: dict[str, dict[MemberRole, Action | None]] | None = None,
    regular: tuple[str, ...] = ("ann@example.com", "bob@example.com"),
    **extra: Any,
) -> ListSnapshot:
    roles = roles if roles is not None else {"ann@example.com": {MemberRole.member: None}}
    return snapshot_of(mlist or new_list(), roles, regular, **extra)


def raw(
    sender: str = "ann@example.com",
    subject: str = "Design notes",
    to: str = LIST,
    body: str = "Hello, here are my notes.\n",
    extra: dict[str, str] | None = None,
) -> bytes:
    lines = [f"From: {sender}", f"To: {to}", f"Subject: {subject}", "Message-ID: <1@x>"]
    lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n" + body.replace("\n", "\r\n")).encode()


def ctx(
    message: bytes | None = None,
    snapshot: ListSnapshot | None = None,
    identity: SenderIdentity | None = None,
    site: SitePolicy | None = None,
) -> PostContext:
    snapshot = snapshot or snap()
    post = Post(message if message is not None else raw())
    sender = post.from_address
    return PostContext(
        mlist=snapshot.mlist,
        post=post,
        envelope=Envelope(mail_from=sender, recipients=[f"<{LIST}>"]),
        sender=sender,
        roles=dict(snapshot.roles_of(sender)),
        identity=identity or SenderIdentity(sender),
        snapshot=snapshot,
        site=site or SitePolicy(),
        recipient=f"<{LIST}>",
    )


def decide(message: bytes, snapshot: ListSnapshot | None = None, **kw: Any):
    post = Post(message)
    return pipeline.process(
        snapshot or snap(), Envelope(recipients=[f"<{LIST}>"]), post, f"<{LIST}>", **kw
    )


# --- no-senders, loop -------------------------------------------------------------------
def test_no_senders_refuses_a_post_without_from():
    message = b"To: dev@example.org\r\nSubject: x\r\n\r\nbody\r\n"
    hit = senders.no_senders(ctx(message))
    assert hit is not None and hit.action is Action.reject
    assert senders.no_senders(ctx()) is None


@pytest.mark.parametrize(
    "value",
    [
        "<mailto:dev@example.org>",
        "<mailto:DEV@Example.org> (Posting address)",
        "<mailto:dev@example.org?subject=x>",
    ],
)
def test_loop_discards_our_own_list_post(value: str):
    hit = loop.loop(ctx(raw(extra={"List-Post": value})))
    assert hit is not None and hit.action is Action.discard


def test_loop_ignores_another_lists_list_post():
    assert loop.loop(ctx(raw(extra={"List-Post": "<mailto:other@example.org>"}))) is None


# --- approved ---------------------------------------------------------------------------
MOD = "mod@example.com"


def _mod_snapshot(**list_settings: Any) -> ListSnapshot:
    return snap(new_list(**list_settings), roles={MOD: {MemberRole.moderator: None}})


def test_authenticated_moderator_pre_approves_without_a_password():
    c = ctx(
        raw(MOD, extra={"Approved": "yes"}),
        _mod_snapshot(),
        SenderIdentity(MOD, ("dkim:example.com",)),
    )
    hit = approved.approved(c)
    assert hit is not None and hit.action is Action.accept
    assert "dkim:example.com" in hit.reason


def test_an_unauthenticated_moderator_does_not_approve():
    c = ctx(raw(MOD, extra={"Approved": "yes"}), _mod_snapshot(), SenderIdentity(MOD))
    assert approved.approved(c) is None


def test_a_member_cannot_approve_even_when_authenticated():
    c = ctx(
        raw(extra={"Approved": "yes"}), snap(), SenderIdentity("ann@example.com", ("sasl:ann",))
    )
    assert approved.approved(c) is None


def test_mailman_password_approves_from_anyone_when_set():
    hashed = passwords.hash_password("s3cret")
    c = ctx(
        raw("x@y.test", extra={"X-Approved": "s3cret"}), snap(new_list(moderator_password=hashed))
    )
    hit = approved.moderator_password(c)
    assert hit is not None and hit.action is Action.accept
    assert approved.approved(c) is None  # (the early rule is the staff's, without password)
    wrong = ctx(
        raw("x@y.test", extra={"Approved": "guess"}), snap(new_list(moderator_password=hashed))
    )
    assert approved.moderator_password(wrong) is None


def test_approved_headers_are_stripped_from_the_members_copy():
    outcome = decide(
        raw(MOD, extra={"Approved": "yes"}),
        _mod_snapshot(),
        identity=SenderIdentity(MOD, ("spf:example.com",)),
    )
    assert isinstance(outcome, Accepted)
    assert outcome.strip_headers == ("Approved",)


def test_pre_approval_skips_the_holding_rules():
    # emergency would hold everyone else's post
    outcome = decide(
        raw(MOD, subject="", extra={"Approved": "yes"}),
        _mod_snapshot(emergency=True),
        identity=SenderIdentity(MOD, ("sasl:mod@example.com",)),
    )
    assert isinstance(outcome, Accepted)


# --- banned-address ---------------------------------------------------------------------
def test_exact_and_regex_bans_refuse():
    s = snap(bans=BanList.of(["spam@bad.test", r"^.*@evil\.test$"]))
    for sender in ("spam@bad.test", "SPAM@bad.test", "anyone@Evil.test"):
        hit = bans.banned_address(ctx(raw(sender), s))
        assert hit is not None and hit.action is Action.reject, sender
    assert bans.banned_address(ctx(raw("ok@good.test"), s)) is None


def test_a_banned_member_is_refused_before_member_moderation():
    s = snap(bans=BanList.of(["ann@example.com"]))
    outcome = decide(raw(), s)
    assert isinstance(outcome, Refused)
    assert "banned-address" in outcome.reply.text


# --- header-match -----------------------------------------------------------------------
def test_list_header_match_uses_its_own_action():
    s = snap(
        header_matches=(
            HeaderRule("x-spam-flag", compile_pattern("yes"), Action.discard, "X-Spam-Flag: yes"),
        )
    )
    hit = headers.header_match(ctx(raw(extra={"X-Spam-Flag": "YES"}), s))
    assert hit is not None and hit.action is Action.discard


def test_header_match_without_action_uses_the_site_default():
    s = snap(
        header_matches=(HeaderRule("subject", compile_pattern("viagra"), None, "Subject: viagra"),)
    )
    hit = headers.header_match(
        ctx(raw(subject="cheap VIAGRA"), s, site=SitePolicy(header_match_action=Action.reject))
    )
    assert hit is not None and hit.action is Action.reject


def test_site_header_checks_run_first():
    site = SitePolicy(header_checks=(("X-Spam-Status", compile_pattern(r"^Yes")),))
    hit = headers.header_match(ctx(raw(extra={"X-Spam-Status": "Yes, score=9"}), site=site))
    assert hit is not None and hit.action is Action.hold and "site" in hit.reason
    assert headers.header_match(ctx(raw(extra={"X-Spam-Status": "No"}), site=site)) is None


def test_suspicious_header_records_a_reason():
    m = new_list(bounce_matching_headers="# comment\nX-Mailer: ^BulkMailer\n")
    hit = headers.suspicious_header(ctx(raw(extra={"X-Mailer": "BulkMailer 2.0"}), snap(m)))
    assert hit is not None and hit.action is Action.defer
    assert headers.suspicious_header(ctx(raw(extra={"X-Mailer": "mutt"}), snap(m))) is None


def test_parse_header_lines_skips_bad_regexes():
    parsed = headers.parse_header_lines("Subject: [unclosed\nFrom: ok\nno colon here")
    assert [h for h, _p in parsed] == ["From"]


# --- emergency, unauthenticated-sender ----------------------------------------------------
def test_emergency_holds_even_members():
    outcome = decide(raw(), snap(new_list(emergency=True)))
    assert isinstance(outcome, Held)
    assert [r.rule for r in outcome.reasons] == ["emergency"]


def test_required_authentication_holds_a_forged_member_from():
    m = new_list(require_authenticated_senders=True)
    outcome = decide(raw(), snap(m), identity=SenderIdentity("ann@example.com"))
    assert isinstance(outcome, Held)
    assert outcome.reasons[0].rule == authentication.UNAUTHENTICATED_SENDER
    ok = decide(raw(), snap(m), identity=SenderIdentity("ann@example.com", ("dkim:example.com",)))
    assert isinstance(ok, Accepted)


def test_required_authentication_leaves_nonmembers_to_nonmember_moderation():
    m = new_list(require_authenticated_senders=True)
    outcome = decide(raw("x@y.test"), snap(m))
    assert [r.rule for r in outcome.reasons] == [NONMEMBER_MODERATION]


# --- administrivia ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("subject", "body", "hits"),
    [
        ("unsubscribe", "x\n", True),
        ("Re: design", "subscribe\n", True),
        ("Re: design", "\n\n  help\n", True),
        ("Re: design", "leave\n", True),
        ("Help with the build", "I need help with the build\n", False),
        ("Re: design", "confirm\n", False),  # confirm needs its token
        ("Re: design", "line\n" * 10 + "unsubscribe\n", False),  # after the first 10 lines
    ],
)
def test_administrivia(subject: str, body: str, hits: bool):
    hit = administrivia.administrivia(ctx(raw(subject=subject, body=body)))
    assert (hit is not None) is hits
    if hit:
        assert hit.action is Action.defer


def test_administrivia_is_off_when_the_list_says_so():
    assert (
        administrivia.administrivia(
            ctx(raw(subject="unsubscribe"), snap(new_list(administrivia=False)))
        )
        is None
    )


# --- implicit-destination, max-recipients ----------------------------------------------
def test_implicit_destination():
    assert destination.implicit_destination(ctx(raw(to="someone@else.test"))) is not None
    assert destination.implicit_destination(ctx(raw(to="Dev <DEV@example.org>"))) is None
    cc = raw(to="a@b.test", extra={"Cc": "dev@example.org"})
    assert destination.implicit_destination(ctx(cc)) is None


def test_acceptable_aliases_exact_and_regex():
    m = new_list(acceptable_aliases=["dev-team@example.org", r"^.*@dev\.example\.org$"])
    assert destination.implicit_destination(ctx(raw(to="dev-team@example.org"), snap(m))) is None
    assert destination.implicit_destination(ctx(raw(to="all@dev.example.org"), snap(m))) is None
    assert destination.implicit_destination(ctx(raw(to="x@example.org"), snap(m))) is not None


def test_max_recipients_counts_to_and_cc():
    many = ", ".join(f"p{i}@x.test" for i in range(9))
    m = new_list(max_num_recipients=10)
    assert recipients.max_recipients(ctx(raw(to=f"{LIST}, {many}"), snap(m))) is not None  # 10
    assert recipients.max_recipients(ctx(raw(to=f"{LIST}, p1@x.test"), snap(m))) is None
    assert (
        recipients.max_recipients(
            ctx(raw(to=f"{LIST}, {many}"), snap(new_list(max_num_recipients=0)))
        )
        is None
    )


# --- max-size, no-subject ---------------------------------------------------------------
def test_max_size_in_kib():
    m = new_list(max_message_size=1)
    assert size.max_size(ctx(raw(body="x" * 2000), snap(m))) is not None
    assert size.max_size(ctx(raw(body="x" * 100), snap(m))) is None
    assert size.max_size(ctx(raw(body="x" * 9000), snap(new_list(max_message_size=0)))) is None


def test_no_subject():
    assert subject.no_subject(ctx(raw(subject=""))) is not None
    assert subject.no_subject(ctx(raw(subject="  "))) is not None
    assert subject.no_subject(ctx(raw(subject="=?utf-8?q?Caf=C3=A9?="))) is None


# --- the chain --------------------------------------------------------------------------
def test_deferring_rules_collect_every_reason_then_hold():
    outcome = decide(raw(subject="", to="elsewhere@x.test", body="x" * 50_000))
    assert isinstance(outcome, Held)
    assert [r.rule for r in outcome.reasons] == ["implicit-destination", "max-size", "no-subject"]


def test_a_member_with_action_accept_skips_the_deferring_rules():
    s = snap(roles={"ann@example.com": {MemberRole.member: Action.accept}})
    assert isinstance(decide(raw(subject=""), s), Accepted)


def test_the_first_deciding_rule_wins_and_earlier_hits_are_kept():
    s = snap(
        new_list(emergency=True),
        header_matches=(HeaderRule("subject", compile_pattern("x"), Action.defer, "Subject: x"),),
    )
    outcome = decide(raw(subject="x"), s)
    assert isinstance(outcome, Held)
    assert [r.rule for r in outcome.reasons] == ["header-match", "emergency"]


def test_reply_to_a_member_does_not_make_a_nonmember_a_member():
    message = raw(
        "stranger@x.test", extra={"Reply-To": "ann@example.com", "Sender": "ann@example.com"}
    )
    outcome = decide(message)
    assert isinstance(outcome, Held)
    assert [r.rule for r in outcome.reasons] == [NONMEMBER_MODERATION]


def test_refusal_text_names_list_rule_and_what_to_do():
    outcome = decide(raw("x@y.test"), snap(new_list(default_nonmember_action=Action.reject)))
    assert isinstance(outcome, Refused)
    text = outcome.reply.text
    assert Reply.coded(outcome.reply) == REFUSED_BY_RULE
    assert "Posts to dev@example.org from nonmembers are not accepted" in text
    assert "dev-owner@example.org" in text and NONMEMBER_MODERATION in text


def test_refusal_text_uses_the_listinfo_url_when_the_domain_has_one():
    s = snap(
        new_list(default_nonmember_action=Action.reject),
        listinfo_url="https://lists.example.org/lists/dev.example.org/",
    )
    outcome = decide(raw("x@y.test"), s)
    assert isinstance(outcome, Refused)
    assert "subscribe at https://lists.example.org/lists/dev.example.org/" in outcome.reply.text


def test_a_list_words_its_own_refusals():
    m = new_list(
        default_nonmember_action=Action.reject,
        refusal_texts={NONMEMBER_MODERATION: "Members only on {list}.\nAsk {owner}."},
    )
    outcome = decide(raw("x@y.test"), snap(m))
    assert isinstance(outcome, Refused)
    assert (
        outcome.reply.text == "Members only on dev@example.org. Ask dev-owner@example.org. "
        f"(rule {NONMEMBER_MODERATION})"
    )


def test_a_broken_custom_text_falls_back():
    m = new_list(default_nonmember_action=Action.reject, refusal_texts={"*": "oops {0} {"})
    outcome = decide(raw("x@y.test"), snap(m))
    assert isinstance(outcome, Refused) and NONMEMBER_MODERATION in outcome.reply.text
