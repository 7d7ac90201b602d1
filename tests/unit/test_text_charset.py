"""``Post.first_text_lines`` reads the charset of an ASCII Content-Type value through the
kept :func:`~mtaplugin.vocabulary.header_block.content_kind`: the same charset the header
block's parser gives (a property test), so administrivia reads the same lines; and it stops
at the ``limit``-th non-blank line."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from mtaplugin.vocabulary.envelope import Post
from mtaplugin.vocabulary.header_block import content_kind, parse_header_block

PIECES = st.sampled_from(
    [
        "text/plain",
        "TEXT/Plain",
        "multipart/mixed",
        ";",
        " ",
        "charset=",
        "CharSet=",
        '"',
        "utf-8",
        "ISO-8859-1",
        "us-ascii",
        "format=flowed",
        "\r\n\t",
        "(comment)",
        "=",
        "'",
        "*0",
        "'en'",
        "%41",
    ]
)


@given(st.lists(PIECES, max_size=10).map("".join))
@example('text/plain; charset="ISO-8859-1"')
@example("text/plain;\r\n\tcharset=us-ascii")
@example("text/plain; charset*=utf-8''%41")
def test_the_kept_charset_is_the_parsers(value: str) -> None:
    head = parse_header_block(f"Content-Type: {value}\r\nSubject: x\r\n\r\n".encode())
    assert content_kind(head.get("Content-Type", ""))[1] == head.get_content_charset()


def test_first_text_lines_in_the_declared_charset() -> None:
    raw = "Content-Type: text/plain; charset=iso-8859-1\r\n\r\ncaf\xe9\r\n\r\nunsubscribe\r\n"
    assert Post(raw.encode("latin-1")).first_text_lines(10) == ["café", "unsubscribe"]
    assert Post(b"Subject: x\r\n\r\n\r\n  a\r\nb\r\n").first_text_lines(1) == ["  a"]


@given(
    st.lists(st.sampled_from(["", " ", "\t", "a", " b ", "help", "x y"]), max_size=30),
    st.integers(-3, 12),
)
def test_first_text_lines_are_the_first_non_blank_ones(lines: list[str], limit: int) -> None:
    body = "\r\n".join(lines)
    post = Post(f"Subject: x\r\n\r\n{body}\r\n".encode())
    assert (
        post.first_text_lines(limit) == [line for line in body.splitlines() if line.strip()][:limit]
    )
