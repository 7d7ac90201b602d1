"""Notices in every shipped language go out as valid mail: the body in UTF-8 (never
assumed Latin-1 or ASCII) with a transfer encoding that keeps lines short, the subject
RFC 2047-encoded, and both decode back to the translated text."""

from __future__ import annotations

from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default

import pytest

from mtaplugin.i18n import SHIPPED_LANGUAGES, _, using
from mtaplugin.notices import Poster, poster_hold_notice
from mtaplugin.notices.templates import render
from mtaplugin.posting.verdict import Reason
from tests.unit.test_i18n import mailing_list

REASONS = (Reason(rule="nonmember", text="not a member"),)


def hold_notice(language: str) -> tuple[bytes, str, str]:
    """The raw notice, and the body and subject it should carry."""
    mlist = mailing_list()
    raw = poster_hold_notice(Poster(mlist, "ann@example.net", "Hello", language), REASONS)
    body = render(
        "list:user:notice:hold",
        language,
        mlist=mlist,
        subject="Hello",
        reasons="  - not a member (nonmember)",
    )
    with using(language):
        subject = _("Your post to {list} awaits moderator approval").format(list="dev@example.org")
    return raw, body, subject


@pytest.mark.parametrize("language", SHIPPED_LANGUAGES)
def test_a_notice_encodes_and_decodes_in_every_language(language):
    raw, body, subject = hold_notice(language)
    # What goes on the wire: 7-bit-clean headers, every line within SMTP's limit.
    head = raw.split(b"\n\n", 1)[0]
    assert head.isascii()
    assert all(len(line.rstrip(b"\r")) <= 998 for line in raw.split(b"\n"))
    msg = message_from_bytes(raw, policy=default)
    assert isinstance(msg, EmailMessage)
    assert " ".join(str(msg["Subject"]).split()) == " ".join(subject.split())
    charset = msg.get_content_charset()
    if body.isascii():
        assert charset in ("us-ascii", "utf-8")
    else:
        assert charset == "utf-8"
        assert msg["Content-Transfer-Encoding"] in ("base64", "quoted-printable", "8bit")
    assert msg.get_content().rstrip("\n") == body.rstrip("\n")


def test_a_japanese_notice_is_in_japanese():
    assert "ja" in SHIPPED_LANGUAGES
    raw, _body, _subject = hold_notice("ja")
    msg = message_from_bytes(raw, policy=default)
    assert isinstance(msg, EmailMessage)
    assert "司会者" in str(msg["Subject"])
    text = msg.get_content()
    assert "保留" in text and "Hello" in text
    assert msg.get_content_charset() == "utf-8"
    # A line of Japanese has no spaces to wrap at: the transfer encoding keeps the wire
    # lines short all the same.
    assert max(len(line) for line in raw.split(b"\n")) <= 78
