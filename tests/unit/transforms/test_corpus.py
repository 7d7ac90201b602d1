"""Every message of the corpus through the whole sequence: the result parses, carries the
list's marks, keeps what must not change, and the header steps are idempotent."""

from __future__ import annotations

import pytest

from mtaplugin.copies.transforms import ARCHIVE_STEPS, archive_copy, members_copy, run
from mtaplugin.copies.transforms.encoding import decode_text
from mtaplugin.vocabulary.context import Templates
from mtaplugin.vocabulary.draft import Draft, apply_ops, header_ops, parse_fields
from tests.unit.transforms.util import all_posts, context, corpus_names, parse, text_of

POSTS = all_posts()
LISTINFO = "https://lists.example.org/lists/team.lists.example.org/"
SETTINGS = [
    {},
    {"reply_goes_to_list": "point_to_list", "first_strip_reply_to": True},
    {"anonymous_list": True},
    {
        "filter_content": True,
        "filter_types": ["application/x-msdownload"],
        "convert_html_to_plaintext": True,
    },
    {"subject_prefix": "[Team %d] ", "include_rfc2369_headers": False},
]


def ctx_for(settings: dict[str, object]):
    from mtaplugin.enums import ReplyToMunging

    settings = dict(settings)
    if "reply_goes_to_list" in settings:
        settings["reply_goes_to_list"] = ReplyToMunging(settings["reply_goes_to_list"])
    return context(settings=settings, listinfo_url=LISTINFO, post_number=42)


@pytest.mark.parametrize("name", sorted(POSTS))
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(s) or "defaults")
def test_the_members_copy_parses_and_carries_the_list_marks(name: str, settings: dict) -> None:
    ctx = ctx_for(settings)
    out = members_copy(ctx, POSTS[name])
    msg = parse(out)
    assert [p.get_content_type() for p in msg.walk()]  # the tree can be walked
    assert msg["List-Id"].endswith("<team.lists.example.org>")
    assert msg.get_all("List-Id") and len(msg.get_all("List-Id")) == 1
    subject = decode_text(msg["Subject"])
    shown = "[Team 42]" if "%d" in str(settings.get("subject_prefix")) else "[Team]"
    assert subject.startswith(shown + " ")
    assert subject.count(shown) == 1
    assert "Approved" not in msg and "Return-Receipt-To" not in msg
    assert "Team mailing list -- team@lists.example.org" in text_of(out)
    assert b"\r\n" in out and b"\n" not in out.replace(b"\r\n", b"")  # CRLF only
    if settings.get("anonymous_list"):
        assert "leak" not in out.decode("utf-8", "replace").split("\r\n\r\n")[0].lower()


@pytest.mark.parametrize("name", sorted(POSTS))
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(s) or "defaults")
def test_the_archive_steps_are_idempotent(name: str, settings: dict) -> None:
    ctx = ctx_for(settings)
    once = archive_copy(ctx, POSTS[name])
    assert archive_copy(ctx, once) == once


@pytest.mark.parametrize("name", sorted(POSTS))
def test_the_archive_copy_has_no_decoration(name: str) -> None:
    out = archive_copy(ctx_for({}), POSTS[name])
    assert "mailing list -- " not in text_of(out)
    assert "List-Id" in parse(out)


@pytest.mark.parametrize("name", sorted(POSTS))
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(s) or "defaults")
def test_milter_edits_reproduce_the_members_copy(name: str, settings: dict) -> None:
    raw = POSTS[name]
    end = raw.index(b"\r\n\r\n") + 4
    original = parse_fields(raw[:end])
    copy = members_copy(ctx_for(settings), raw)
    new = parse_fields(copy[: copy.index(b"\r\n\r\n") + 4])
    got = apply_ops(original, header_ops(original, new))
    norm = lambda fields: [(k.lower(), v.replace("\r\n", "\n")) for k, v in fields]  # noqa: E731
    assert norm(got) == norm(new)


def test_a_signed_part_is_carried_byte_for_byte() -> None:
    raw = POSTS["signed.eml"]
    out = members_copy(ctx_for({}), raw)
    signed_body = raw[raw.index(b"\r\n\r\n") + 4 :]
    assert signed_body in out  # the whole multipart/signed body, untouched
    msg = parse(out)
    assert msg.get_content_type() == "multipart/mixed"
    parts = msg.get_payload()
    assert parts[0].get_content_type() == "multipart/signed"
    assert "mailing list --" in parts[-1].get_payload(decode=True).decode()
    inner = parts[0].get_payload()
    assert "mailing list" not in inner[0].get_payload()


def test_headers_only_lists_leave_the_body_alone() -> None:
    ctx = context(
        listinfo_url=LISTINFO,
        templates=Templates(header="", footer=""),
    )
    raw = POSTS["big-attachment (generated)"]
    draft = run(ctx, raw, (*ARCHIVE_STEPS,))
    assert not draft.body_changed
    assert members_copy(ctx, raw).endswith(raw[raw.index(b"\r\n\r\n") + 4 :])


def test_draft_round_trip_keeps_the_bytes() -> None:
    # Every post of the corpus, and the corpus is there.
    assert set(corpus_names()) < set(POSTS) and len(corpus_names()) >= 10
    changed = [name for name, raw in POSTS.items() if Draft.from_bytes(raw).to_bytes() != raw]
    assert changed == []
