"""A notice's bytes as :func:`mtaplugin.notices.build` writes them (directly, not through
``EmailMessage``): every header ASCII and within SMTP's line length, what a reader's mail
library decodes is what was given, and an attached post is the post's own bytes."""

from __future__ import annotations

from email import message_from_bytes, policy
from email.message import EmailMessage

from hypothesis import given, settings
from hypothesis import strategies as st

from mtaplugin.notices import build, header_value

#: text a notice carries: any character but surrogates (a subject, a name, a body)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)
NAME = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\'), max_size=40
)


def parsed(raw: bytes) -> EmailMessage:
    msg = message_from_bytes(raw, policy=policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


def as_written(body: str) -> str:
    """``body`` with its line breaks (CR LF, CR or LF) as LF, ending with one."""
    text = body.replace("\r\n", "\n").replace("\r", "\n")
    return text if text.endswith("\n") else text + "\n"


def head_lines(raw: bytes) -> list[bytes]:
    return raw.split(b"\n\n", 1)[0].split(b"\n")


@settings(max_examples=300, deadline=None)
@given(subject=TEXT, body=TEXT, name=NAME)
def test_what_a_reader_decodes_is_what_was_given(subject: str, body: str, name: str) -> None:
    name = header_value(name)  # (one line, single spaces: as a display name comes)
    to = f'"{name}" <ann@example.org>' if name else "ann@example.org"
    raw = build("team-owner@lists.example", to, subject, body, extra={"Reply-To": "r@x.test"})
    for line in head_lines(raw):
        assert line.isascii() and len(line) <= 998
    msg = parsed(raw)
    assert not msg.defects
    assert str(msg["Subject"]) == header_value(subject)
    (address,) = msg["To"].addresses
    assert address.addr_spec == "ann@example.org"
    assert address.display_name == name
    assert str(msg["Reply-To"]) == "r@x.test"
    # the body as given, its line breaks written as LF, one at the end
    assert msg.get_content() == as_written(body)


@settings(max_examples=200, deadline=None)
@given(body=TEXT, post_body=st.binary(max_size=300), ascii_only=st.booleans())
def test_an_attached_post_is_its_own_bytes(body: str, post_body: bytes, ascii_only: bool) -> None:
    content = bytes(b & 0x7F for b in post_body) if ascii_only else post_body
    content = content.replace(b"\0", b"").replace(b"\r", b"")
    post = b"From: a@example.net\r\nSubject: hi\r\n\r\n" + content.replace(b"\n", b"\r\n")
    raw = build("o@example.org", "o@example.org", "held", body, attach=post)
    msg = parsed(raw)
    parts = list(msg.iter_parts())
    assert [p.get_content_type() for p in parts] == ["text/plain", "message/rfc822"]
    expected = post.replace(b"\r\n", b"\n")
    # the part's bytes, between its own blank line and the closing boundary
    boundary = msg.get_boundary()
    assert boundary is not None
    attached = raw.split(b"Content-Disposition: attachment\n\n", 1)[1]
    attached = attached.rsplit(b"\n--" + boundary.encode() + b"--\n", 1)[0]
    assert attached.rstrip(b"\n") == expected.rstrip(b"\n")
    label = "7bit" if post.isascii() else "8bit"
    assert parts[1]["Content-Transfer-Encoding"] == label
    body_label = parts[0]["Content-Transfer-Encoding"]
    widest = "8bit" if "8bit" in (label, body_label) else None
    assert msg["Content-Transfer-Encoding"] == widest
    assert parts[0].get_content() == as_written(body)


def test_a_long_line_is_quoted_printable_and_a_long_subject_folded() -> None:
    line = "Grüße " + "x" * 200
    raw = build("o@example.org", "o@example.org", "word " * 40, line + "\n")
    for head in head_lines(raw):
        assert len(head) <= 78
    msg = parsed(raw)
    assert msg["Content-Transfer-Encoding"] in ("quoted-printable", "base64")
    assert msg.get_content() == line + "\n"
    assert str(msg["Subject"]) == ("word " * 40).strip()
