"""mtaplugin.posting.verdict: replies that cannot be mis-built."""

from __future__ import annotations

import pytest

from mtaplugin.posting.verdict import (
    Reject,
    Reply,
    TempFail,
    permanent,
    temporary,
)


def test_reply_str():
    assert str(Reply(550, "5.1.1", "no such list")) == "550 5.1.1 no such list"


@pytest.mark.parametrize(
    ("code", "enhanced"),
    [
        (550, "4.1.1"),  # a 5xx code with a 4xx enhanced code
        (451, "5.3.0"),  # a 4xx code with a 5xx enhanced code
        (250, "2.0.0"),  # not a failure
        (600, "5.0.0"),
        (399, "4.0.0"),
        (550, "5.1"),
        (550, "5.1.1000"),
        (550, "x.1.1"),
        (550, "3.1.1"),
    ],
)
def test_mismatched_or_malformed_replies_are_refused(code: int, enhanced: str):
    with pytest.raises(ValueError):
        Reply(code, enhanced, "text")


@pytest.mark.parametrize("text", ["two\nlines", "carriage\rreturn", "crlf\r\n"])
def test_reply_text_must_be_one_line(text: str):
    with pytest.raises(ValueError, match="one line"):
        Reply(550, "5.7.1", text)


def test_permanent():
    r = permanent("5.7.1", "refused")
    assert (r.code, r.enhanced, r.text) == (550, "5.7.1", "refused")
    assert permanent("5.3.4", "too big", code=552).code == 552
    with pytest.raises(ValueError, match="5xx"):
        permanent("5.7.1", "refused", code=451)
    with pytest.raises(ValueError):
        permanent("4.7.1", "refused")


def test_temporary():
    r = temporary("4.3.0", "later")
    assert (r.code, r.enhanced, r.text) == (451, "4.3.0", "later")
    assert temporary("4.2.2", "full", code=452).code == 452
    with pytest.raises(ValueError, match="4xx"):
        temporary("4.3.0", "later", code=550)
    with pytest.raises(ValueError):
        temporary("5.3.0", "later")


def test_reject_needs_5xx_and_tempfail_needs_4xx():
    assert Reject(permanent("5.7.1", "no")).reply.code == 550
    assert TempFail(temporary("4.3.0", "later")).reply.code == 451
    with pytest.raises(ValueError):
        Reject(temporary("4.3.0", "later"))
    with pytest.raises(ValueError):
        TempFail(permanent("5.7.1", "no"))


def test_reply_is_frozen():
    r = permanent("5.7.1", "no")
    with pytest.raises(AttributeError):
        r.code = 250  # type: ignore[misc]
