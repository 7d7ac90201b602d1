"""Content filtering: types, extensions, alternatives, HTML to text, whole-post verdicts."""

from __future__ import annotations

import pytest

from mtaplugin.posting.content_filter import content_filter, screen
from mtaplugin.vocabulary.draft import Draft
from tests.unit.transforms.util import context, corpus, make_list, parse


def filtered(raw: bytes, **settings) -> bytes:
    d = Draft.from_bytes(raw)
    content_filter(context(settings={"filter_content": True, **settings}), d)
    return d.to_bytes()


def types_of(raw: bytes) -> list[str]:
    return [p.get_content_type() for p in parse(raw).walk()]


def test_off_unless_filter_content() -> None:
    raw = corpus("nested-mixed.eml")
    d = Draft.from_bytes(raw)
    content_filter(context(settings={"filter_types": ["application"]}), d)
    assert d.to_bytes() == raw
    assert screen(make_list(filter_types=["multipart"]), raw) is None


def test_filter_extensions_and_types_remove_parts() -> None:
    out = filtered(corpus("nested-mixed.eml"), filter_extensions=["EXE"])
    assert "application/x-msdownload" not in types_of(out)
    assert "application/pdf" in types_of(out)
    assert parse(out)["X-Content-Filtered-By"] == "mtaplugin"
    out = filtered(corpus("nested-mixed.eml"), filter_types=["application"])
    assert not [t for t in types_of(out) if t.startswith("application/")]


def test_pass_types_and_pass_extensions_keep_only_those() -> None:
    out = filtered(corpus("nested-mixed.eml"), pass_types=["text/plain"])
    assert types_of(out) == ["text/plain"]  # multiparts of one part are recast
    assert parse(out).get_payload().strip() == "See the attachments."
    out = filtered(corpus("nested-mixed.eml"), pass_extensions=["pdf"])
    names = [p.get_filename() for p in parse(out).walk() if p.get_filename()]
    assert names == ["report.pdf"]


def test_collapse_alternatives_keeps_the_first() -> None:
    out = filtered(corpus("alternative.eml"), collapse_alternatives=True)
    msg = parse(out)
    assert msg.get_content_type() == "text/plain"
    assert msg.get_payload().strip() == "Hello list (plain)."
    assert msg["Subject"] == "alternative"
    out = filtered(corpus("alternative.eml"), collapse_alternatives=False)
    assert parse(out).get_content_type() == "multipart/alternative"


def test_html_becomes_plain_text() -> None:
    out = filtered(
        corpus("html-only.eml"), convert_html_to_plaintext=True, collapse_alternatives=False
    )
    msg = parse(out)
    assert msg.get_content_type() == "text/plain"
    text = msg.get_payload(decode=True).decode("utf-8")
    assert "Hello **list**" in text and "https://example.com/" in text
    assert "<p>" not in text


@pytest.mark.parametrize(
    ("name", "settings", "why"),
    [
        ("html-only.eml", {"filter_types": ["text/html"]}, "text/html is filtered"),
        ("html-only.eml", {"pass_types": ["text/plain"]}, "text/html is not allowed"),
        ("nested-mixed.eml", {"filter_types": ["multipart/mixed"]}, "multipart/mixed"),
        ("nested-mixed.eml", {"pass_types": ["image"]}, "nothing was left"),
    ],
)
def test_a_post_with_nothing_left_is_screened_out(name: str, settings: dict, why: str) -> None:
    reason = screen(make_list(filter_content=True, **settings), corpus(name))
    assert reason is not None and why in reason


def test_a_post_that_keeps_something_passes_the_screen() -> None:
    mlist = make_list(filter_content=True, filter_types=["text/html"])
    assert screen(mlist, corpus("alternative.eml")) is None
    assert screen(mlist, corpus("plain-ascii.eml")) is None


def test_filtering_is_idempotent_and_parses() -> None:
    settings = {"filter_extensions": ["exe"], "convert_html_to_plaintext": True}
    for name in ("nested-mixed.eml", "alternative.eml", "html-only.eml", "signed.eml"):
        once = filtered(corpus(name), **settings)
        assert filtered(once, **settings) == once, name
        # It parses: a Content-Type of its own (get_content_type() alone would default to
        # text/plain), and no part the parser found broken.
        msg = parse(once)
        assert msg["Content-Type"] is not None, name
        assert [p.defects for p in msg.walk() if p.defects] == [], name
