"""Properties of the posting decision (``pipeline.process``) on hostile posts: whatever the
message, the envelope and the list's settings, a decision comes back, and a post that a
refusing rule matches is never accepted, whatever else it carries.

The strategies and profiles are in tests/hostile.py (``HYPOTHESIS_PROFILE=long`` for many
more examples)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mtaplugin.enums import Action, MemberRole
from mtaplugin.posting import pipeline
from mtaplugin.posting.rules import administrivia
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.verdict import Accepted, Deferred, Dropped, Held, Refused
from mtaplugin.regexes import compile_pattern
from mtaplugin.vocabulary.bans import BanList
from mtaplugin.vocabulary.envelope import Envelope, Post
from mtaplugin.vocabulary.snapshot import HeaderRule, Recipient
from tests.helpers import snapshot_of
from tests.hostile import LIST, addresses, envelopes, messages
from tests.unit.transforms.util import make_list

MEMBERS = ("anne@example.com", "bob@example.net")
OUTCOMES = (Accepted, Held, Refused, Dropped, Deferred)

ACTIONS = st.sampled_from(list(Action))


@st.composite
def snapshots(draw: st.DrawFn, **forced: object) -> ListSnapshot:
    """A list with drawn settings, two members, maybe bans and header matches."""
    settings: dict[str, object] = {
        "default_member_action": draw(ACTIONS),
        "default_nonmember_action": draw(ACTIONS),
        "max_message_size": draw(st.sampled_from([0, 1, 40])),
        "max_num_recipients": draw(st.sampled_from([0, 1, 10])),
        "require_explicit_destination": draw(st.booleans()),
        "administrivia": draw(st.booleans()),
        "filter_content": draw(st.booleans()),
        "filter_types": draw(st.sampled_from([[], ["text/html"], ["text"], ["multipart"]])),
        "pass_types": draw(st.sampled_from([[], ["text/plain"], ["image"]])),
        "emergency": draw(st.booleans()),
    }
    settings.update(forced)
    mlist = make_list(**settings)
    roles = {m: {MemberRole.member: draw(st.one_of(st.none(), ACTIONS))} for m in MEMBERS}
    matches = tuple(
        HeaderRule(h, compile_pattern(p), a, p)
        for h, p, a in draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["Subject", "X-Spam-Flag", "From", "Content-Type"]),
                    st.sampled_from(["yes", "^$", ".*", "é", "\\x00"]),
                    st.one_of(st.none(), ACTIONS),
                ),
                max_size=2,
            )
        )
    )
    bans = BanList.of(draw(st.lists(st.sampled_from(["^.*@spam\\.example$", "x@y.z"]))), "t")
    staff = ("owner@example.org",)
    return snapshot_of(mlist, roles, MEMBERS, staff, bans=bans, header_matches=matches)


def decide(snap: ListSnapshot, raw: bytes, envelope: tuple[str, list[str]]):
    mail_from, rcpts = envelope
    env = Envelope(mail_from=mail_from, recipients=rcpts, queue_id="PROPQ")
    return pipeline.process(snap, env, Post(raw), f"<{LIST}>")


@given(snap=snapshots(), raw=messages(), envelope=envelopes())
def test_every_post_gets_a_decision(snap: ListSnapshot, raw: bytes, envelope) -> None:
    out = decide(snap, raw, envelope)
    assert isinstance(out, OUTCOMES)
    if isinstance(out, Refused):
        assert out.reply.code // 100 == 5 and out.reply.text.isprintable()
    if isinstance(out, Deferred):
        assert out.reply.code // 100 == 4


@given(
    snap=snapshots(),
    sender=st.one_of(addresses(), st.sampled_from(MEMBERS)),
    raw=st.data(),
    envelope=envelopes(),
)
def test_a_banned_sender_is_never_accepted(snap: ListSnapshot, sender: str, raw, envelope):
    """Whatever the post carries (Approved: and Urgent: headers with a wrong password, a
    member's address after the banned one, a List-Post header...), the first From: address
    is banned: never accepted."""
    banned = f"{sender.split('@')[0] or 'x'}@spam.example".replace('"', "")
    snap = ListSnapshot(**{**snap.__dict__, "bans": BanList.of([banned])})
    message = raw.draw(messages(sender=f"<{banned}>, {sender}"))
    out = decide(snap, message, envelope)
    assert not isinstance(out, Accepted), out


@given(snap=snapshots(max_message_size=1, default_member_action=Action.defer), raw=st.data())
def test_a_post_over_the_size_limit_is_never_accepted(snap: ListSnapshot, raw) -> None:
    """A member's post over max_message_size: held (or refused by an earlier rule), never
    accepted -- unless the member's own moderation action is accept (Mailman's order)."""
    sender = MEMBERS[0]
    snap = ListSnapshot(**{**snap.__dict__, "header_matches": ()})  # (an accept decides)
    snap.roles[sender][MemberRole.member] = raw.draw(
        st.sampled_from([None, Action.defer, Action.hold, Action.reject, Action.discard])
    )
    message = raw.draw(messages(sender=sender, extra=[b"X-Pad: " + b"p" * 1100]))
    out = decide(snap, message, (sender, [f"<{LIST}>"]))
    assert not isinstance(out, Accepted), out


@given(snap=snapshots(), raw=st.data(), action=st.sampled_from([Action.reject, Action.discard]))
def test_a_refusing_header_match_is_never_accepted(snap: ListSnapshot, raw, action) -> None:
    rule = HeaderRule("X-Bad", compile_pattern("forbidden"), action, "forbidden")
    snap = ListSnapshot(**{**snap.__dict__, "header_matches": (rule,)})
    sender = raw.draw(st.one_of(addresses(), st.sampled_from(MEMBERS)))
    message = raw.draw(messages(sender=sender, extra=[b"X-Bad: totally FORBIDDEN stuff"]))
    out = decide(snap, message, (sender, [f"<{LIST}>"]))
    assert not isinstance(out, Accepted), out


@given(snap=snapshots(), raw=messages(), envelope=envelopes())
def test_a_post_without_a_from_address_is_never_accepted(snap: ListSnapshot, raw, envelope):
    post = Post(raw)
    out = decide(snap, raw, envelope)
    if not post.from_address:
        assert not isinstance(out, Accepted), out


# --- what the properties found ------------------------------------------------------------
def test_a_bare_cr_does_not_hide_a_header_from_the_rules() -> None:
    """Found by test_a_refusing_header_match_is_never_accepted: Python's parser ended the
    From: line at the bare CR, took ``Subject `` (no colon) for the start of the body, and
    the X-Bad field -- which Postfix sees, and delivers -- escaped the header match."""
    snap = ListSnapshot(
        pk=1,
        generation=1,
        mlist=make_list(),
        roles={MEMBERS[0]: {MemberRole.member: Action.accept}},
        regular=(Recipient(MEMBERS[0], True),),
        staff=(),
        header_matches=(HeaderRule("X-Bad", compile_pattern("forbidden"), Action.reject, "f"),),
    )
    raw = (
        b"From: anne@example.com\rSubject \r\nX-Bad: totally FORBIDDEN stuff\r\n"
        b"Content-Type: text/plain\r\n\r\nbody\r\n"
    )
    out = decide(snap, raw, (MEMBERS[0], [f"<{LIST}>"]))
    assert isinstance(out, Refused) and out.rule == "header-match"


def test_broken_base64_in_an_encoded_subject_gets_a_decision() -> None:
    """Found by the long profile: ``=?utf-8?B?M?=`` raised HeaderParseError out of
    Post.subject (the no-subject and topic rules read it)."""
    snap = ListSnapshot(pk=1, generation=1, mlist=make_list(), roles={}, regular=(), staff=())
    raw = b"From: a@example.com\r\nSubject: =?utf-8?B?M?==?utf-8?B?M?=\r\n\r\nbody\r\n"
    assert Post(raw).subject == "=?utf-8?B?M?==?utf-8?B?M?="
    assert isinstance(decide(snap, raw, ("a@example.com", [f"<{LIST}>"])), OUTCOMES)


def test_a_banned_utf8_address_is_refused() -> None:
    """Found by the long profile: an RFC 6532 From: (UTF-8 bytes in the header) was read
    with surrogate escapes and did not compare equal to the banned ``jürgen@…``."""
    snap = ListSnapshot(
        pk=1,
        generation=1,
        mlist=make_list(),
        roles={},
        regular=(),
        staff=(),
        bans=BanList.of(["jürgen@spam.example"]),
    )
    raw = (
        "From: <jürgen@spam.example>, jürgen@example.com\r\nSubject: hi\r\n\r\nbody\r\n"
    ).encode()
    assert Post(raw).from_address == "jürgen@spam.example"
    out = decide(snap, raw, ("jürgen@spam.example", [f"<{LIST}>"]))
    assert isinstance(out, Refused) and out.rule == "banned-address"


_WORDS = st.sampled_from(
    [*administrivia.COMMANDS, "HELP", "Subscribe:", "unsubscribe::", "LİSTS", "ſet", "hello"]
)
_BLANKS = st.sampled_from(["", " ", "\t", "\u2003", "\x1c", "\xa0", ":", "\x0b"])


@given(
    lines=st.lists(
        st.tuples(_BLANKS, _WORDS, _BLANKS, st.lists(st.sampled_from(["a", "b c", " "]))).map(
            lambda t: t[0] + t[1] + t[2] + " ".join(t[3])
        )
        | st.text(max_size=30),
        max_size=12,
    )
)
def test_the_administrivia_search_finds_every_line_that_looks_like_a_command(lines) -> None:
    """The one search over a post's first lines (the usual post: no command word) misses
    no line that :func:`administrivia.looks_like_command` takes for a command."""
    lines = [part for line in lines for part in line.splitlines() if part.strip()]
    if any(administrivia.looks_like_command(line) for line in lines):
        assert administrivia._COMMAND_START.search("\n".join(lines))
