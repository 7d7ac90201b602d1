"""The members' copy of a list version, prepared once (mtaplugin.copies.plan): a copy made
with what was prepared for the list's snapshot is, byte for byte, the copy made from the
list alone; a new version of the list (settings, templates) changes the next copy."""

from __future__ import annotations

import dataclasses
import secrets
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.copies import paths, plan, transforms
from mtaplugin.copies.transforms import dmarc_mitigation, headers
from mtaplugin.engine import ListEngine
from mtaplugin.enums import ArchivePolicy, DMARCMitigateAction, MemberRole, ReplyToMunging
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.posting.verdict import Accept
from mtaplugin.vocabulary.context import Templates
from mtaplugin.vocabulary.draft import (
    AddHeader,
    ChangeHeader,
    DeleteHeader,
    Field,
    HeaderOp,
    InsertHeader,
    header_ops,
)
from mtaplugin.vocabulary.envelope import Envelope, Post
from tests.helpers import make_post
from tests.hostile import messages
from tests.unit.sites import Roster, make_site
from tests.unit.test_properties_transforms import contexts as property_contexts
from tests.unit.test_properties_transforms import passes_the_filter
from tests.unit.transforms.util import make_list

LISTINFO = "https://lists.example.org/lists/team.lists.example.org/"
HEAD = (
    b"From: Ann Example <ann@example.com>\r\nTo: team@lists.example.org\r\n"
    b"Date: Sun, 6 Dec 2026 00:00:00 +0000\r\nMessage-ID: <p1@example.com>\r\n"
)

#: the posts of the table: (name, raw)
POSTS: list[tuple[str, bytes]] = [
    ("plain", HEAD + b"Subject: A typical post\r\n\r\nLa de da.\r\n"),
    (
        "plain, latin-1, quoted-printable",
        HEAD + b"Subject: caf\xe9\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=iso-8859-1\r\n"
        b"Content-Transfer-Encoding: quoted-printable\r\n\r\nCaf=E9 au lait.\r\n",
    ),
    (
        "RFC 2047 subject with the prefix and a reply marker",
        HEAD + b"Subject: Re: [Team] =?utf-8?q?R=C3=A9union_=C3=A0_5h?=\r\n\r\nOui.\r\n",
    ),
    (
        "multipart/mixed",
        HEAD + b"Subject: two parts\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b1"\r\n\r\n'
        b"--b1\r\nContent-Type: text/plain\r\n\r\nHello.\r\n"
        b"--b1\r\nContent-Type: application/octet-stream\r\n\r\nxyz\r\n--b1--\r\n",
    ),
    (
        "multipart/alternative (wrapped by the footer)",
        HEAD + b"Subject: html\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/alternative; boundary="b2"\r\n\r\n'
        b"--b2\r\nContent-Type: text/plain\r\n\r\nHi\r\n"
        b"--b2\r\nContent-Type: text/html\r\n\r\n<p>Hi</p>\r\n--b2--\r\n",
    ),
    (
        "the poster's own List-* fields, Reply-To, an approval header",
        HEAD + b"Subject: [Team 12] fields\r\nList-Id: <other.example.com>\r\n"
        b"List-Post: <mailto:other@example.com>\r\nReply-To: ann@home.example\r\n"
        b"Approved: secret\r\nX-Topics: x\r\n\r\nBody.\r\n",
    ),
    (
        "no subject, no Message-ID",
        b"From: ann@example.com\r\nTo: team@lists.example.org\r\n\r\nx\r\n",
    ),
]

#: the list settings of the table
SETTINGS: list[dict[str, Any]] = [
    {},
    {"subject_prefix": "[Team %d] ", "archive_policy": ArchivePolicy.never},
    {
        "reply_goes_to_list": ReplyToMunging.point_to_list,
        "first_strip_reply_to": True,
        "dmarc_mitigate_action": DMARCMitigateAction.munge_from,
    },
    {"dmarc_mitigate_action": DMARCMitigateAction.wrap_message, "include_rfc2369_headers": False},
    {"anonymous_list": True, "subject_prefix": ""},
    {"filter_content": True, "filter_types": ["text/html"], "topics_enabled": True},
    {"description": "Équipe", "reply_goes_to_list": ReplyToMunging.explicit_header_only,
     "reply_to_address": "all@example.org"},
]  # fmt: skip

TEMPLATES = [
    Templates(),
    Templates("", ""),
    # a footer naming the member: empty in the shared copy, filled in a member's own
    Templates(header="Hello $display_name", footer="For $user_name_or_email -- $listname"),
]


@pytest.fixture(autouse=True)
def _no_randomness(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same boundaries and Message-IDs for both copies (a wrapped post gets new ones)."""
    monkeypatch.setattr(secrets, "token_hex", lambda n=16: "ab" * n)
    monkeypatch.setattr(dmarc_mitigation, "make_msgid", lambda domain: f"<made@{domain}>")


def snapshot(pk: int, generation: int, templates: Templates, **settings: Any) -> ListSnapshot:
    return ListSnapshot(
        pk=pk,
        generation=generation,
        mlist=make_list(**settings),
        roles={},
        regular=(),
        staff=(),
        listinfo_url=LISTINFO,
        templates=templates,
    )


def contexts(snap: ListSnapshot, **kwargs: Any) -> tuple[TransformContext, TransformContext]:
    """(a context reading the list, one with what was prepared for its version)."""
    fresh = paths.context(snap.mlist, listinfo_url=snap.listinfo_url, templates=snap.templates,
                          post_number=12, **kwargs)  # fmt: skip
    return fresh, paths.snapshot_context(snap, 12, **kwargs)


@pytest.mark.parametrize("settings", SETTINGS, ids=range(len(SETTINGS)))
@pytest.mark.parametrize("templates", TEMPLATES, ids=("default", "none", "named"))
@pytest.mark.parametrize("mitigate", [False, True], ids=("own-from", "dmarc"))
def test_a_prepared_copy_is_the_copy_made_from_the_list(
    settings: dict[str, Any], templates: Templates, mitigate: bool
) -> None:
    snap = snapshot(7, 1, templates, **settings)
    fresh, prepared = contexts(snap, should_mitigate=mitigate, topics=("news",))
    assert prepared.prepared is plan.for_snapshot(snap)  # made once, kept for the version
    for name, raw in POSTS:
        post = Post(raw)
        assert paths.in_place_copy(prepared, post) == paths.in_place_copy(fresh, post), name
        assert transforms.members_copy(prepared, raw) == transforms.members_copy(fresh, raw)
        archive = transforms.archive_copy(prepared, raw)
        assert archive == transforms.archive_copy(fresh, raw), name
        # a member's own copy (made from the archive copy) reads the list, not the plan
        own = [
            transforms.own_copy(
                dataclasses.replace(ctx, member="bob@example.com", member_name="Bob"), archive
            )
            for ctx in (prepared, fresh)
        ]
        assert own[0] == own[1], name


def test_a_new_version_of_the_list_is_prepared_again() -> None:
    raw = POSTS[0][1]
    first = snapshot(8, 1, Templates(footer="Footer one"))
    assert b"Footer one" in transforms.members_copy(paths.snapshot_context(first), raw)
    assert plan.for_snapshot(first) is plan.for_snapshot(first)
    # the footer template changed: the list's generation moved, a new snapshot
    second = snapshot(8, 2, Templates(footer="Footer two"), subject_prefix="[Two] ")
    copy = transforms.members_copy(paths.snapshot_context(second), raw)
    assert b"Footer two" in copy and b"Footer one" not in copy
    assert b"Subject: [Two] A typical post" in copy
    assert plan.for_snapshot(second) is not plan.for_snapshot(first)


def test_a_settings_change_reaches_the_next_post_through_the_engine(
    module_sessions: sessionmaker[Session],
) -> None:
    site = make_site(module_sessions, Roster((("anne@example.com", MemberRole.member),)))
    engine = ListEngine(module_sessions)

    def edits() -> dict[str, str]:
        post = make_post("anne@example.com", site.address, subject="hello")
        verdict = engine.decide(Envelope("anne@example.com", [f"<{site.address}>"]), post)
        assert isinstance(verdict, Accept), verdict
        return {op.name: op.value or "" for op in verdict.edits.header_ops}

    assert edits()["Subject"].startswith("[")
    site.update(subject_prefix="[Changed] ", include_rfc2369_headers=False)
    after = edits()
    assert after["Subject"] == "[Changed] hello"
    assert "List-Post" not in after and "List-Id" in after


PREFIXES = ["[Team] ", "[Team %d] ", "%d", "[a b]", "(Lists) Re:", "[Tëam] ", "[ſales] "]
WORDS = ["[team]", "[TEAM]", "team", "Re:", "re :", "[Team 12]", "12", "[a", "b]", "x", "[ſales]",
         "[sales]", "(lists)", "Fwd:", " ", "\t", "é"]  # fmt: skip


@given(
    prefix=st.sampled_from(PREFIXES),
    subject=st.lists(st.sampled_from(WORDS) | st.text(max_size=4), max_size=8).map(" ".join),
    number=st.integers(0, 99),
)
def test_a_subject_without_the_prefixs_words_is_prefixed_as_by_the_pattern(
    prefix: str, subject: str, number: int
) -> None:
    made = headers.prefixed_subject(prefix, subject, number)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(headers, "_may_hold", lambda prefix, subject: True)
        assert made == headers.prefixed_subject(prefix, subject, number)


def reference_header_ops(original: list[Field], new: list[Field]) -> tuple[HeaderOp, ...]:
    """header_ops as it was before the fields kept in front were passed over."""
    by_name: dict[str, list[str]] = {}
    first_name: dict[str, str] = {}
    for k, v in original:
        by_name.setdefault(k.lower(), []).append(v)
        first_name.setdefault(k.lower(), k)
    seen: dict[str, int] = {}
    changes: list[HeaderOp] = []
    inserts: list[tuple[int, Field]] = []
    last_kept = -1
    for position, (k, v) in enumerate(new):
        n = seen.get(k.lower(), 0)
        seen[k.lower()] = n + 1
        olds = by_name.get(k.lower(), [])
        if n < len(olds):
            last_kept = position
            if olds[n] != v and olds[n].replace("\r\n", "\n") != v.replace("\r\n", "\n"):
                changes.append(ChangeHeader(k, n + 1, v))
        else:
            inserts.append((position, (k, v)))
    deletes: list[HeaderOp] = [
        DeleteHeader(first_name[key], index)
        for key, olds in by_name.items()
        for index in range(len(olds), seen.get(key, 0), -1)
    ]
    inserted: list[HeaderOp] = [
        AddHeader(k, v) if position > last_kept else InsertHeader(k, v, position)
        for position, (k, v) in inserts
    ]
    return (*changes, *deletes, *inserted)


@given(ctx=property_contexts(), raw=messages())
def test_the_milter_edits_are_those_of_the_reference(ctx: TransformContext, raw: bytes) -> None:
    assume(passes_the_filter(ctx, raw))
    post = Post(raw)
    draft = transforms.run(ctx, raw, transforms.MEMBER_STEPS, post.headers, post.body_start)
    ops = header_ops(draft.original, draft.fields)
    assert ops == reference_header_ops(draft.original, draft.fields)
    # and with the kept fields as other tuples (nothing passed over)
    assert ops == header_ops([(k, v) for k, v in draft.original], draft.fields)
