"""Properties of the transforms and of the milter's edits on hostile posts: the members'
copy is made whatever the post, parses, keeps the post's parts; the archive copy is
idempotent (the archive and the digests may meet a post twice); the milter's header edits
turn the original into the members' copy; and every edit can be handed to libmilter.

The strategies and profiles are in tests/hostile.py (``HYPOTHESIS_PROFILE=long``)."""

from __future__ import annotations

import email
from email.message import Message
from email.policy import compat32

from hypothesis import assume, example, given, note
from hypothesis import strategies as st

from mtaplugin.copies.transforms import archive_copy, members_copy
from mtaplugin.enums import DMARCMitigateAction, ReplyToMunging
from mtaplugin.frontends.milter.session import _milter_value
from mtaplugin.posting import content_filter
from mtaplugin.vocabulary.context import Templates
from mtaplugin.vocabulary.draft import Draft, apply_ops, header_ops, parse_fields
from mtaplugin.vocabulary.header_block import header_end
from tests.hostile import messages
from tests.unit.transforms.util import context

LISTINFO = "https://lists.example.org/lists/team.lists.example.org/"


@st.composite
def contexts(draw: st.DrawFn, mitigate: bool = True):
    settings: dict[str, object] = {
        "subject_prefix": draw(st.sampled_from(["[Team] ", "[Team %d] ", "", "[Tëam] "])),
        "reply_goes_to_list": draw(st.sampled_from(list(ReplyToMunging))),
        "first_strip_reply_to": draw(st.booleans()),
        "anonymous_list": draw(st.booleans()),
        "include_rfc2369_headers": draw(st.booleans()),
        "filter_content": draw(st.booleans()),
        "filter_types": draw(st.sampled_from([[], ["text/html"], ["application/ms-tnef"]])),
        "convert_html_to_plaintext": draw(st.booleans()),
        "collapse_alternatives": draw(st.booleans()),
        "dmarc_mitigate_action": draw(st.sampled_from(list(DMARCMitigateAction))),
    }
    templates = draw(
        st.sampled_from(
            [
                Templates(),
                Templates(header="Hello $display_name\n", footer="é $listname"),
                Templates("", ""),
            ]
        )
    )
    return context(
        settings=settings,
        listinfo_url=LISTINFO,
        post_number=draw(st.integers(0, 10**6)),
        templates=templates,
        should_mitigate=mitigate and draw(st.booleans()),
    )


def passes_the_filter(ctx, raw: bytes) -> bool:
    """Whether the post reaches the transforms at all: a post content filtering would
    leave empty gets the list's filter_action at end of DATA (pipeline.process)."""
    return content_filter.screen(ctx.mlist, raw) is None


def parse(raw: bytes) -> Message:
    return email.message_from_bytes(raw, policy=compat32)


def leaves(msg: Message) -> list[Message]:
    return [p for p in msg.walk() if not p.is_multipart()]


def undecorated_payloads(msg: Message) -> list[bytes]:
    """The encoded payloads of the parts decoration never rewrites (not text/plain)."""
    out = []
    for part in leaves(msg):
        if part.get_content_maintype() in ("text", "multipart", "message"):
            continue  # (decorated, or a multipart too broken to parse)
        payload = part.get_payload()
        if isinstance(payload, str) and payload.strip():
            out.append(payload.encode("utf-8", "surrogateescape").strip())
    return out


@given(ctx=contexts(), raw=messages())
@example(  # a UTF-7 encoded word decodes to a lone surrogate: the prefixed Subject: raised
    ctx=context(settings={"subject_prefix": "[Team] "}, listinfo_url=LISTINFO),
    raw=b"From: a@example.com\r\nSubject: =?utf-7?Q?+2AA-?=\r\n\r\nbody\r\n",
)
@example(  # an 8-bit boundary: the footer's delimiter could not be written
    ctx=context(listinfo_url=LISTINFO),
    raw=b'Content-Type: multipart/mixed; boundary="\xc3\xa9"\r\r\nThis is a multi-part message'
    b" in MIME format.\r\n--\xc3\xa9--\r\n",
)
@example(  # a multipart with 8-bit text and no parts: the content filter could not write it
    ctx=context(settings={"filter_content": True}, listinfo_url=LISTINFO),
    raw=b'MIME-Version: 1.0\rContent-Type: multipart/mixed; boundary="0"\r\n\r\nThis is a '
    b"multi-part message in MIME format.\r\n\x80\r\n--0--\r\n",
)
@example(  # the SMTP-time content filter read this as text/plain, the copy as text/html
    ctx=context(settings={"filter_content": True, "filter_types": ["text/html"]}),
    raw=b"Subject: \rX-0 \r\nContent-Type: text/html\r\n\r\nyyyy\r\n",
)
@example(  # broken base64 in encoded words: the subject prefix raised HeaderParseError
    ctx=context(listinfo_url=LISTINFO),
    raw=b"From: a@example.com\r\nSubject: =?utf-8?B?M?==?utf-8?B?M?=\r\n\r\nbody\r\n",
)
@example(  # a bare CR ended the header block early for the members' mail programs
    ctx=context(listinfo_url=LISTINFO),
    raw=b"Content-Type: text/plain\r\r\nyyyy\r\n",
)
@example(  # an 8-bit Content-Type (a Header object to Python): the footer's charset raised
    ctx=context(listinfo_url=LISTINFO),
    raw=b"Content-Type: \xc2\x80\r\nContent-Type: text/plain\r\n\r\n" + b"y" * 300 + b"\xc3\xa9",
)
def test_the_members_copy_is_made_and_parses(ctx, raw: bytes) -> None:
    note(f"raw={raw!r}")
    assume(passes_the_filter(ctx, raw))
    out = members_copy(ctx, raw)
    msg = parse(out)
    assert msg["List-Id"] and len(msg.get_all("List-Id")) == 1
    assert [p.get_content_type() for p in msg.walk()]
    # 8-bit or not, the header block is lines ending in CRLF
    head = out[: header_end(out)]
    assert b"\n" not in head.replace(b"\r\n", b"")


@given(ctx=contexts(mitigate=False), raw=messages())
@example(  # Python's parser alone saw an attachment here; Postfix sees a Subject
    ctx=context(listinfo_url=LISTINFO),
    raw=b"Subject: \rContent-Type: application/octet-stream\r\n\r\nyyyy\r\n",
)
def test_the_members_copy_keeps_the_attachments(ctx, raw: bytes) -> None:
    """Without content filtering, what is not text reaches the members byte for byte."""
    note(f"raw={raw!r}")
    ctx.mlist.filter_content = False
    ctx.mlist.collapse_alternatives = False
    # (the post as the MTA reads it: a bare CR does not end a header line)
    before = undecorated_payloads(parse(Draft.from_bytes(raw).to_bytes()))
    after = undecorated_payloads(parse(members_copy(ctx, raw)))
    missing = [p for p in before if not any(p in a for a in after)]
    assert missing == []


@given(ctx=contexts(), raw=messages())
def test_the_archive_copy_is_idempotent(ctx, raw: bytes) -> None:
    note(f"raw={raw!r}")
    assume(passes_the_filter(ctx, raw))
    once = archive_copy(ctx, raw)
    assert archive_copy(ctx, once) == once


@given(raw=messages())
def test_a_draft_gives_back_the_bytes_it_was_made_from_when_nothing_changed(raw: bytes) -> None:
    """Byte for byte for a clean header block (CRLF lines ``Name: value``); otherwise the
    draft's normal form (CRLF line ends, no bare CR, a blank line) is reached in one step."""
    draft = Draft.from_bytes(raw)
    out = draft.to_bytes()
    assert Draft.from_bytes(out).to_bytes() == out
    end = header_end(raw)
    head = raw[:end]
    lines = head.split(b"\r\n")
    clean = (
        head.endswith(b"\r\n\r\n")
        and b"\r" not in head.replace(b"\r\n", b"")
        and b"\n" not in head.replace(b"\r\n", b"")
        and all(b": " in line for line in lines if line and line[:1] not in (b" ", b"\t"))
        and all(
            not set(line.split(b":", 1)[0]) & set(b" \t")
            and line.split(b":", 1)[1].startswith(b" ")
            for line in lines
            if line and line[:1] not in (b" ", b"\t")
        )
        and all(not line[:1].isspace() or line.strip() for line in lines[:-2])
    )
    if clean and draft.fields:
        assert out == raw


@given(ctx=contexts(), raw=messages())
def test_the_milter_edits_make_the_members_copy(ctx, raw: bytes) -> None:
    """What the MTA does with the milter's header edits gives the members' copy's header
    fields; every edit can be handed to libmilter (a str without lone surrogates)."""
    note(f"raw={raw!r}")
    assume(passes_the_filter(ctx, raw))
    original = parse_fields(raw[: header_end(raw)])
    copy = members_copy(ctx, raw)
    new = parse_fields(copy[: header_end(copy)])
    ops = header_ops(original, new)
    got = apply_ops(original, ops)

    def norm(fields: list[tuple[str, str]]) -> dict[str, list[str]]:
        # each name's values in order (a rebuilt MIME tree may move Content-Type to the
        # end, the MTA keeps it in place: the same message to any reader)
        by_name: dict[str, list[str]] = {}
        for k, v in fields:
            by_name.setdefault(k.lower(), []).append(v.replace("\r\n", "\n"))
        return by_name

    assert norm(got) == norm(new)
    for op in ops:
        value = _milter_value(op.value)
        if value is not None:
            value.encode("utf-8")  # libmilter gets UTF-8 bytes
            assert "\r\n" not in value
