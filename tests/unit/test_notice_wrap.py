"""Notices wrap Japanese and Chinese by display columns, and English as before."""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from mtaplugin.notices.templates import render
from mtaplugin.notices.wrap import _width, wordwrap, wrap_line, wrap_wide
from tests.unit.test_i18n import VARIABLES, mailing_list


def test_latin_text_wraps_as_jinja_wraps_it():
    text = "word " * 40 + "\n\n  indented line stays indented"
    assert wordwrap(text, 30, False, None, False) == "\n".join(
        "\n".join(
            textwrap.wrap(
                line,
                30,
                expand_tabs=False,
                replace_whitespace=False,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
        for line in text.splitlines()
    )


def test_wide_text_wraps_by_columns_and_keeps_addresses_whole():
    line = (
        "あなたのアドレス bob@example.net から、リスト dev@example.org の"
        "自動応答を求めるメッセージを受け取りました。" * 2
    )
    lines = wrap_wide(line, 40)
    assert len(lines) > 3
    assert all(_width(part) <= 40 for part in lines)
    assert "".join(lines).replace(" ", "") == line.replace(" ", "")
    assert any("bob@example.net" in part for part in lines)
    assert any("dev@example.org" in part for part in lines)


def test_no_line_starts_with_closing_punctuation():
    line = "あいうえお、" * 30
    for width in range(6, 20):
        for part in wrap_wide(line, width):
            assert part[0] != "、"


def test_indentation_is_kept():
    assert wrap_wide("    確認", 72) == ["    確認"]


def test_japanese_notice_lines_fit_the_column_limit():
    text = render("list:user:notice:no-more-today", "ja", mlist=mailing_list(), **VARIABLES)
    assert len(text.splitlines()) >= 4
    assert all(_width(line) <= 72 for line in text.splitlines())


def test_english_notice_is_unchanged_by_the_filter():
    from jinja2 import Environment
    from jinja2.filters import do_wordwrap

    text = render("list:user:notice:no-more-today", "en", mlist=mailing_list(), **VARIABLES)
    paragraph = text.split("\n\n")[0]
    assert paragraph == do_wordwrap(
        Environment(), paragraph.replace("\n", " "), 72, False, None, False
    )


@settings(max_examples=500, deadline=None)
@given(
    line=st.text(st.characters(max_codepoint=127, blacklist_characters="\n\r"), max_size=90),
    width=st.integers(min_value=1, max_value=100),
    hyphens=st.booleans(),
)
def test_an_ascii_line_wraps_as_textwrap_wraps_it(line: str, width: int, hyphens: bool) -> None:
    """The shortcut for an ASCII line that fits gives what textwrap gives (and the others
    go through textwrap)."""
    expected = "\n".join(
        textwrap.wrap(
            line,
            width=width,
            expand_tabs=False,
            replace_whitespace=False,
            break_long_words=True,
            break_on_hyphens=hyphens,
        )
    )
    assert wrap_line(line, width, True, "\n", hyphens) == expected
