"""The decision's fast paths give exactly what the standard library's slower ones give:
the address lists of the plain form (``header_addresses`` ÷ ``email.utils.getaddresses``),
a subject without encoded words (``decode_header``/``make_header``) and a short ASCII
header value (``email.header.Header.encode``).  Each is checked on drawn values that
mostly take the fast path and sometimes just miss it."""

from __future__ import annotations

from email.header import Header, decode_header, make_header
from email.utils import getaddresses

from hypothesis import given, settings
from hypothesis import strategies as st

from mtaplugin.copies.transforms.encoding import decode_text, encode_text
from mtaplugin.vocabulary.addresses import header_addresses
from mtaplugin.vocabulary.envelope import Post

_CHARS = st.sampled_from([*"abZ09.-_+'=!#%&*/?^`{|}~", "..", "@", "ü", "\udce4", '"', "("])
_ATOM = st.lists(_CHARS, max_size=6).map("".join)
_WS = st.sampled_from(["", " ", "  ", "\t", "\r\n ", "\r\n\t"])
_ADDR = st.builds(
    lambda local, domain, at: f"{local}@{domain}" if at else local + domain,
    _ATOM,
    st.lists(_ATOM, min_size=1, max_size=3).map(".".join),
    st.booleans(),
)
_NAME = st.lists(st.tuples(_ATOM, _WS), max_size=3).map(lambda xs: "".join(a + w for a, w in xs))
_ITEM = st.one_of(
    st.builds(lambda w1, a, w2: w1 + a + w2, _WS, _ADDR, _WS),
    st.builds(lambda w1, a, w2: f"{w1}<{a}>{w2}", _WS, _ADDR, _WS),
    st.builds(lambda w1, n, w, a, w2: f"{w1}{n}{w}<{a}>{w2}", _WS, _NAME, _WS, _ADDR, _WS),
    st.text(alphabet='ab@<>,"() .:;', max_size=8),
)
_VALUE = st.lists(_ITEM, max_size=4).map(",".join)


@settings(max_examples=600)
@given(st.lists(_VALUE, max_size=3))
def test_header_addresses_read_as_getaddresses_reads(values: list[str]) -> None:
    assert header_addresses(values) == getaddresses(values)


def test_the_plain_form_takes_the_fast_path() -> None:
    values = ["Anne Person <anne@example.com>, bob@example.net", "\r\n\t<cy@example.org>"]
    assert header_addresses(values) == [
        ("Anne Person", "anne@example.com"),
        ("", "bob@example.net"),
        ("", "cy@example.org"),
    ]


_PIECES = st.sampled_from([*(chr(c) for c in range(32, 127)), "  ", "=?", "?=", "\t", "é"])
_TEXT = st.lists(_PIECES, max_size=40).map("".join)


@settings(max_examples=600)
@given(_TEXT)
def test_a_subject_reads_as_decode_header_reads_it(subject: str) -> None:
    post = Post(b"Subject: " + subject.encode("utf-8", "surrogateescape") + b"\r\n\r\nbody\r\n")
    raw = str(post.headers.get("Subject", ""))
    try:
        expected = str(make_header(decode_header(raw)))
    except (UnicodeDecodeError, LookupError, ValueError):
        expected = raw
    assert post.subject == expected
    if raw.isascii():
        assert decode_text(raw) == expected


@settings(max_examples=600)
@given(_TEXT, st.sampled_from(["Subject", "List-Id", "X-Topics"]))
def test_a_header_value_encodes_as_header_encodes_it(text: str, name: str) -> None:
    charset = "us-ascii" if text.isascii() else "utf-8"
    assert encode_text(text, name) == Header(text, charset, header_name=name).encode(linesep="\r\n")
