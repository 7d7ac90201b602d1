"""DMARC munge_from / wrap_message, and cleanse (anonymous lists too)."""

from __future__ import annotations

from email.utils import getaddresses

from mtaplugin.copies.transforms import members_copy
from mtaplugin.copies.transforms.cleanse import APPROVAL_HEADERS, cleanse
from mtaplugin.copies.transforms.dmarc_mitigation import mitigate, munged_from
from mtaplugin.copies.transforms.encoding import decode_text
from mtaplugin.enums import DMARCMitigateAction, ReplyToMunging
from mtaplugin.mailauth.dmarc import should_mitigate
from mtaplugin.posting.rules.approved import HEADERS
from mtaplugin.vocabulary.draft import Draft
from tests.unit.transforms.util import context, corpus, make_list, parse

MUNGE = {"dmarc_mitigate_action": DMARCMitigateAction.munge_from}
WRAP = {"dmarc_mitigate_action": DMARCMitigateAction.wrap_message}


def mitigated(raw: bytes, settings: dict, should: bool = True) -> bytes:
    d = Draft.from_bytes(raw)
    mitigate(context(settings=settings, should_mitigate=should), d)
    return d.to_bytes()


def test_munge_from_credits_the_author_in_reply_to() -> None:
    out = mitigated(corpus("plain-ascii.eml"), MUNGE)
    msg = parse(out)
    assert msg["From"] == "Ann Example via Team <team@lists.example.org>"
    assert [a for _n, a in getaddresses(msg.get_all("Reply-To"))] == ["ann@example.net"]
    assert msg["Cc"] is None


def test_munge_from_uses_cc_when_reply_to_points_to_the_list() -> None:
    settings = {**MUNGE, "reply_goes_to_list": ReplyToMunging.point_to_list}
    msg = parse(mitigated(corpus("plain-ascii.eml"), settings))
    assert [a for _n, a in getaddresses(msg.get_all("Cc"))] == ["ann@example.net"]


def test_munged_from_names() -> None:
    mlist = make_list()
    assert munged_from(mlist, "=?iso-8859-1?q?J=F6rg?= <j@example.de>").startswith("=?utf-8?")
    assert decode_text(munged_from(mlist, "=?iso-8859-1?q?J=F6rg?= <j@example.de>")) == (
        "Jörg via Team <team@lists.example.org>"
    )
    assert munged_from(mlist, "bob@example.com") == ("bob--- via Team <team@lists.example.org>")


def test_nothing_happens_unless_the_engine_says_so() -> None:
    raw = corpus("plain-ascii.eml")
    assert mitigated(raw, MUNGE, should=False) == raw
    assert mitigated(raw, {"dmarc_mitigate_action": DMARCMitigateAction.reject}) == raw


def test_should_mitigate() -> None:
    munge = make_list(**MUNGE)
    assert should_mitigate(munge, True, "a@example.com")
    assert not should_mitigate(munge, False, "a@example.com")
    listed = make_list(**MUNGE, dmarc_addresses=["a@example.com"])
    assert should_mitigate(listed, False, "A@example.com")
    regex = make_list(**MUNGE, dmarc_addresses=["^.*@example\\.com$"])
    assert should_mitigate(regex, False, "a@example.com")
    assert should_mitigate(make_list(**MUNGE, dmarc_mitigate_unconditionally=True), False, "x@y.z")
    assert not should_mitigate(make_list(**MUNGE, anonymous_list=True), True, "a@example.com")
    assert not should_mitigate(make_list(), True, "a@example.com")


def test_wrap_message_without_text() -> None:
    raw = corpus("latin1-8bit.eml")
    out = mitigated(raw, WRAP)
    msg = parse(out)
    assert msg.get_content_type() == "message/rfc822"
    assert decode_text(msg["From"]).endswith("via Team <team@lists.example.org>")
    assert msg["Message-ID"] != "<latin1@example.de>"
    assert msg["Subject"] == "=?iso-8859-1?q?AW:_Gr=FC=DFe_aus_K=F6ln?="
    assert msg["Content-Transfer-Encoding"] == "8bit"
    assert out.endswith(raw)  # the original, byte for byte
    inner = msg.get_payload()[0]
    assert inner["Message-ID"] == "<latin1@example.de>"


def test_wrap_message_with_text() -> None:
    settings = {**WRAP, "dmarc_wrapped_message_text": "Wrapped for DMARC."}
    out = mitigated(corpus("plain-ascii.eml"), settings)
    msg = parse(out)
    assert msg.get_content_type() == "multipart/mixed"
    text, wrapped = msg.get_payload()
    assert text.get_payload() == "Wrapped for DMARC.\r\n"
    assert wrapped.get_content_type() == "message/rfc822"
    assert wrapped.get_payload()[0]["From"] == "Ann Example <ann@example.net>"
    assert [a for _n, a in getaddresses(msg.get_all("Reply-To"))] == ["ann@example.net"]


def test_the_archive_copy_is_not_munged_but_the_members_copy_is() -> None:
    from mtaplugin.copies.transforms import archive_copy

    ctx = context(settings=MUNGE, should_mitigate=True)
    raw = corpus("plain-ascii.eml")
    assert parse(archive_copy(ctx, raw))["From"] == "Ann Example <ann@example.net>"
    assert "via Team" in parse(members_copy(ctx, raw))["From"]


def test_cleanse_removes_what_mailman_removes() -> None:
    assert set(APPROVAL_HEADERS) == set(HEADERS)
    d = Draft.from_bytes(corpus("plain-ascii.eml"))
    cleanse(context(), d)
    names = {k.lower() for k, _v in d.fields}
    assert not names & {"approved", "return-receipt-to", "disposition-notification-to"}
    assert {"from", "subject", "message-id", "date"} <= names


def test_anonymous_list_removes_the_posters_identity() -> None:
    d = Draft.from_bytes(corpus("anonymous-leaky.eml"))
    cleanse(context(settings={"anonymous_list": True, "description": "Team list"}), d)
    head = d.header_bytes().decode()
    assert "leak" not in head.lower() and "192.0.2" not in head and "Secret" not in head
    assert d.get("From") == "Team list <team@lists.example.org>"
    assert d.get("Reply-To") == "team@lists.example.org"
    assert d.get("Message-ID").endswith("@lists.example.org>")
    assert d.get("Subject") == "anonymous please"
