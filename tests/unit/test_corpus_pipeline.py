"""Every message of tests/corpus (the odd ones included: TNEF, AppleDouble, five forwards
deep, S/MIME, PGP/MIME, DSNs, calendar invites, RFC 6532 headers, broken encoded words,
bare CRs, 998+ octet lines) through the posting decision, as a member's and as a
nonmember's post; tests/unit/transforms/test_corpus.py runs them through the transforms."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtaplugin.copies.transforms import members_copy
from mtaplugin.enums import Action, MemberRole
from mtaplugin.posting import pipeline
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.verdict import Accepted, Refused
from mtaplugin.vocabulary.bans import BanList
from mtaplugin.vocabulary.envelope import Envelope, Post
from tests.helpers import snapshot_of
from tests.unit.transforms.util import context, make_list, parse

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
FILES = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.eml"))
LIST = "team@lists.example.org"
#: the posts with a From: address (a ban needs one; the others are refused as no-senders
#: in test_every_corpus_post_gets_a_decision)
SENDERS = [n for n in FILES if Post((CORPUS / n).read_bytes()).from_address]


def snapshot(sender: str, **settings: object) -> ListSnapshot:
    roles = {sender: {MemberRole.member: None}} if sender else {}
    member, owner = ("member@example.com",), ("owner@example.org",)
    return snapshot_of(make_list(**settings), roles, member, owner)


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("as_member", [True, False], ids=["member", "nonmember"])
def test_every_corpus_post_gets_a_decision(name: str, as_member: bool) -> None:
    raw = (CORPUS / name).read_bytes()
    post = Post(raw)
    sender = post.from_address if as_member else ""
    snap = snapshot(
        sender,
        default_nonmember_action=Action.reject,
        filter_content=True,
        filter_types=["application/x-msdownload"],
        max_message_size=0,
        require_explicit_destination=False,  # (the bounces are not addressed to it)
        administrivia=False,
    )
    env = Envelope(mail_from=post.from_address, recipients=[f"<{LIST}>"], queue_id="CORPUSQ")
    out = pipeline.process(snap, env, post, f"<{LIST}>")
    if not post.from_address:
        assert isinstance(out, Refused) and out.rule == "no-senders"
    elif as_member:
        assert isinstance(out, Accepted), out
        copy = parse(members_copy(context(), raw))
        assert copy["List-Id"]
    else:
        assert isinstance(out, Refused) and out.rule == "nonmember-moderation"


@pytest.mark.parametrize("name", SENDERS)
def test_a_banned_sender_is_refused_whatever_the_corpus_post(name: str) -> None:
    raw = (CORPUS / name).read_bytes()
    post = Post(raw)
    snap = snapshot(post.from_address)
    snap = ListSnapshot(**{**snap.__dict__, "bans": BanList.of([post.from_address])})
    env = Envelope(mail_from=post.from_address, recipients=[f"<{LIST}>"])
    out = pipeline.process(snap, env, post, f"<{LIST}>")
    assert isinstance(out, Refused) and out.rule == "banned-address"
