"""Header and footer decorations: where they go and in which charset."""

from __future__ import annotations

import base64

from mtaplugin.copies.transforms.decorate import decorate, texts
from mtaplugin.vocabulary.context import Templates
from mtaplugin.vocabulary.draft import Draft
from tests.unit.transforms.util import context, corpus, parse, text_of

TEMPLATES = Templates(header="Header of $display_name", footer="-- \n$listname ($list_id)")


def decorated(raw: bytes, templates: Templates = TEMPLATES, **kwargs) -> bytes:
    d = Draft.from_bytes(raw)
    decorate(context(templates=templates, **kwargs), d)
    return d.to_bytes()


def test_mailmans_variables() -> None:
    ctx = context(
        templates=Templates(
            header="$display_name $listname $list_id $request_email $owner_email",
            footer="$listinfo_uri|$member|$user_address|$short_listname@$domain|$unknown",
        ),
        listinfo_url="https://l.example.org/lists/team.lists.example.org/",
        member="ann@example.net",
    )
    header, footer = texts(ctx)
    assert header == (
        "Team team@lists.example.org team.lists.example.org "
        "team-request@lists.example.org team-owner@lists.example.org"
    )
    assert footer == (
        "https://l.example.org/lists/team.lists.example.org/|ann@example.net|ann@example.net|"
        "team@lists.example.org|$unknown"
    )


def test_the_default_footer_is_mailmans() -> None:
    header, footer = texts(context())
    assert header == ""
    assert footer.splitlines() == [
        "_______________________________________________",
        "Team mailing list -- team@lists.example.org",
        "To unsubscribe send an email to team-leave@lists.example.org",
    ]


def test_empty_templates_leave_the_post_alone() -> None:
    raw = corpus("plain-ascii.eml")
    assert decorated(raw, Templates(header="", footer="")) == raw


def test_plain_text_inline() -> None:
    out = decorated(corpus("plain-ascii.eml"))
    msg = parse(out)
    assert msg.get_content_type() == "text/plain"
    body = msg.get_payload(decode=True).decode("ascii")
    assert body.startswith("Header of Team\r\nHello list,")
    assert body.endswith(
        "here are the notes.\r\n-- \r\nteam@lists.example.org (team.lists.example.org)\r\n"
    )


def test_latin1_text_stays_latin1_when_the_footer_fits() -> None:
    out = decorated(corpus("latin1-8bit.eml"), Templates(footer="Café $display_name"))
    msg = parse(out)
    assert msg.get_content_charset() == "iso-8859-1"
    assert msg.get_payload(decode=True).decode("iso-8859-1").endswith("Café Team\r\n")


def test_text_becomes_utf8_when_the_footer_does_not_fit_its_charset() -> None:
    out = decorated(corpus("latin1-8bit.eml"), Templates(footer="Ευχαριστώ"))
    msg = parse(out)
    assert msg.get_content_charset() == "utf-8"
    text = msg.get_payload(decode=True).decode("utf-8")
    assert "Grüße aus Köln" in text and text.endswith("Ευχαριστώ\r\n")
    assert msg["Content-Transfer-Encoding"] == "8bit"


def test_ascii_text_with_a_non_ascii_footer_declares_utf8_and_8bit() -> None:
    out = decorated(corpus("no-content-type.eml"), Templates(footer="Grüße"))
    msg = parse(out)
    assert msg.get_content_charset() == "utf-8"
    assert msg["Content-Transfer-Encoding"] == "8bit"
    assert msg["MIME-Version"] == "1.0"
    assert msg.get_payload(decode=True).decode() == "plain old RFC 822 body\r\nGrüße\r\n"


def test_quoted_printable_and_base64_keep_their_encoding() -> None:
    for name, cte in (
        ("utf8-qp-encoded-subject.eml", "quoted-printable"),
        ("base64-text.eml", "base64"),
    ):
        out = decorated(corpus(name), Templates(footer="Fußnote"))
        msg = parse(out)
        assert msg["Content-Transfer-Encoding"] == cte
        assert msg.get_payload(decode=True).decode("utf-8").endswith("Fußnote\r\n")
    raw = decorated(corpus("base64-text.eml"), Templates(footer="x"))
    body = raw.split(b"\r\n\r\n", 1)[1]
    assert all(len(line) <= 76 for line in body.split(b"\r\n"))
    base64.b64decode(body)  # still valid base64


def test_multipart_mixed_gets_parts_before_and_after() -> None:
    out = decorated(corpus("nested-mixed.eml"))
    msg = parse(out)
    parts = msg.get_payload()
    assert msg.get_content_type() == "multipart/mixed"
    assert [p.get_content_type() for p in parts] == [
        "text/plain",
        "multipart/alternative",
        "application/pdf",
        "application/x-msdownload",
        "text/plain",
    ]
    assert parts[0].get_payload(decode=True) == b"Header of Team\r\n"
    assert parts[-1]["Content-Disposition"] == "inline"
    assert not msg.defects


def test_other_types_are_wrapped_in_multipart_mixed() -> None:
    for name in ("html-only.eml", "alternative.eml", "signed.eml"):
        raw = corpus(name)
        out = decorated(raw)
        msg = parse(out)
        assert msg.get_content_type() == "multipart/mixed", name
        inner = msg.get_payload()[1]
        assert inner.get_content_type() == parse(raw).get_content_type()
        assert raw.split(b"\r\n\r\n", 1)[1] in out  # the original body, byte for byte
        assert "Header of Team" in text_of(out)


def test_a_text_attachment_is_not_decorated_inline() -> None:
    raw = (
        b"From: a@b.c\r\nContent-Type: text/plain\r\n"
        b'Content-Disposition: attachment; filename="notes.txt"\r\n\r\nnotes\r\n'
    )
    msg = parse(decorated(raw))
    assert msg.get_content_type() == "multipart/mixed"
    assert msg.get_payload()[1].get_payload() == "notes\r\n"


def test_malformed_mime_is_wrapped_not_broken() -> None:
    for name in ("malformed-no-close.eml", "malformed-no-boundary.eml"):
        out = decorated(corpus(name))
        msg = parse(out)
        assert msg.get_content_type() == "multipart/mixed"
        assert "team@lists.example.org (team.lists.example.org)" in text_of(out)


def test_undecodable_text_is_wrapped() -> None:
    raw = (
        b"From: a@b.c\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n"
        b"caf\xe9 bytes that lie about their charset\r\n"
    )
    out = decorated(raw)
    assert b"caf\xe9 bytes" in out
    assert parse(out).get_content_type() == "multipart/mixed"
