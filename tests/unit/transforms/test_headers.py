"""Subject prefix, Reply-To policies, Precedence and the List-* fields."""

from __future__ import annotations

import pytest

from mtaplugin.copies.transforms.encoding import decode_text
from mtaplugin.copies.transforms.headers import (
    list_headers,
    precedence,
    prefixed_subject,
    reply_to,
    subject_prefix,
)
from mtaplugin.enums import ArchivePolicy, ReplyToMunging
from mtaplugin.vocabulary.draft import Draft
from tests.unit.transforms.util import context

LISTINFO = "https://lists.example.org/lists/team.lists.example.org/"


def draft(*fields: tuple[str, str]) -> Draft:
    return Draft(list(fields), b"body\r\n")


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("hello", "[Team] hello"),
        ("[Team] hello", "[Team] hello"),
        ("Re: hello", "[Team] Re: hello"),
        ("Re: [Team] hello", "[Team] Re: hello"),
        ("[Team] Re: hello", "[Team] Re: hello"),
        ("Re: [Team] Re: [Team] hello", "[Team] Re: hello"),
        ("RE: re: Re: hello", "[Team] Re: hello"),
        ("AW: [Team] SV: VS: hello", "[Team] Re: hello"),
        ("[team]   hello", "[Team] hello"),
        ("Fwd: [Team] hello", "[Team] Fwd: hello"),
        ("", "[Team] (no subject)"),
        ("Re:", "[Team] Re: (no subject)"),
        ("Re[2]: hello", "[Team] Re: hello"),
    ],
)
def test_prefix_is_shown_once_with_one_re(subject: str, expected: str) -> None:
    assert prefixed_subject("[Team] ", subject, 7) == expected
    # and again: idempotent
    assert prefixed_subject("[Team] ", expected, 7) == expected


def test_post_number_prefix_replaces_the_old_number() -> None:
    assert prefixed_subject("[Team %d]", "Re: [Team 41] hello", 42) == "[Team 42] Re: hello"
    assert prefixed_subject("[Team %d]", "[Team 9] [Team 10] hi", 42) == "[Team 42] hi"


def test_subject_prefix_encodes_non_ascii_and_decodes_encoded_words() -> None:
    d = draft(("Subject", "=?iso-8859-1?q?Re:_Gr=FC=DFe?="))
    subject_prefix(context(settings={"subject_prefix": "[Café] "}), d)
    value = d.get("Subject")
    assert value.isascii() and "=?utf-8?" in value
    assert decode_text(value) == "[Café] Re: Grüße"


def test_subject_prefix_reads_raw_utf8_subjects() -> None:
    raw = "Réunion".encode().decode("ascii", "surrogateescape")
    d = draft(("Subject", raw))
    subject_prefix(context(), d)
    assert decode_text(d.get("Subject")) == "[Team] Réunion"


def test_no_prefix_leaves_the_subject_alone() -> None:
    d = draft(("Subject", "Re: [x] hi"))
    subject_prefix(context(settings={"subject_prefix": ""}), d)
    assert d.fields == [("Subject", "Re: [x] hi")]


def test_a_missing_subject_gets_one() -> None:
    d = draft(("From", "a@b.c"))
    subject_prefix(context(), d)
    assert d.get("Subject") == "[Team] (no subject)"


@pytest.mark.parametrize(
    ("policy", "strip", "explicit", "expected"),
    [
        (ReplyToMunging.no_munging, False, "", ["ann@example.net"]),
        (ReplyToMunging.no_munging, True, "", []),
        (ReplyToMunging.point_to_list, False, "", ["ann@example.net", "team@lists.example.org"]),
        (ReplyToMunging.point_to_list, True, "", ["team@lists.example.org"]),
        (
            ReplyToMunging.explicit_header,
            False,
            "talk@example.org",
            ["ann@example.net", "talk@example.org"],
        ),
        (ReplyToMunging.explicit_header, True, "talk@example.org", ["talk@example.org"]),
        (ReplyToMunging.explicit_header_only, False, "talk@example.org", ["talk@example.org"]),
    ],
)
def test_reply_to_policies(
    policy: ReplyToMunging, strip: bool, explicit: str, expected: list[str]
) -> None:
    from email.utils import getaddresses

    ctx = context(
        settings={
            "reply_goes_to_list": policy,
            "first_strip_reply_to": strip,
            "reply_to_address": explicit,
        }
    )
    d = draft(("From", "ann@example.net"), ("Reply-To", "ann@example.net"))
    reply_to(ctx, d)
    assert [a for _n, a in getaddresses(d.get_all("Reply-To"))] == expected
    reply_to(ctx, d)  # idempotent
    assert [a for _n, a in getaddresses(d.get_all("Reply-To"))] == expected


def test_precedence_list_unless_the_post_says() -> None:
    d = draft()
    precedence(context(), d)
    assert d.get("Precedence") == "list"
    d = draft(("Precedence", "bulk"))
    precedence(context(), d)
    assert d.get_all("Precedence") == ["bulk"]


def test_list_headers_replace_the_posters_and_name_every_address() -> None:
    d = draft(
        ("List-Id", "<evil.example.com>"),
        ("List-Unsubscribe", "<mailto:x@evil>"),
        ("List-Archive", "<https://evil.example/archive/>"),
    )
    list_headers(context(listinfo_url=LISTINFO, settings={"description": "Our team"}), d)
    f = {k: v.replace("\r\n ", " ") for k, v in d.fields}  # unfolded
    # Long lists of links are folded, one link a line.
    lines = [line for k, v in d.fields for line in f"{k}: {v}".split("\r\n")]
    assert all(len(line) <= 78 or line.count("<") == 1 for line in lines)
    assert len(lines) > len(d.fields)
    assert f["List-Id"] == '"Our team" <team.lists.example.org>'
    assert f["List-Help"] == "<mailto:team-request@lists.example.org?subject=help>"
    assert f["List-Owner"] == "<mailto:team-owner@lists.example.org>"
    assert f["List-Post"] == "<mailto:team@lists.example.org>"
    assert f["List-Subscribe"] == f"<{LISTINFO}>, <mailto:team-join@lists.example.org>"
    assert f["List-Unsubscribe"] == (
        f"<{LISTINFO}unsubscribe>, <mailto:team-leave@lists.example.org>"
    )
    # No archive exists yet: no List-Archive link to a page that is not there, and the
    # poster's own is removed.
    assert "List-Archive" not in f
    # The shared copy has no one-click header: its link names no member.
    assert "List-Unsubscribe-Post" not in f
    assert len(d.get_all("List-Id")) == 1


def test_list_headers_without_rfc2369_or_posting() -> None:
    d = draft()
    list_headers(context(settings={"include_rfc2369_headers": False}), d)
    assert [k for k, _v in d.fields] == ["List-Id"]
    d = draft()
    list_headers(
        context(settings={"allow_list_posts": False, "archive_policy": ArchivePolicy.never}), d
    )
    f = dict(d.fields)
    assert f["List-Post"] == "NO"
    assert "List-Archive" not in f
    assert f["List-Unsubscribe"] == "<mailto:team-leave@lists.example.org>"


def test_list_id_with_a_non_ascii_description() -> None:
    d = draft()
    list_headers(context(settings={"description": "Équipe"}), d)
    value = d.get("List-Id")
    assert value.isascii() and value.endswith(" <team.lists.example.org>")
    assert decode_text(value) == "Équipe <team.lists.example.org>"


def test_a_members_own_copy_carries_the_one_click_link() -> None:
    from mtaplugin.copies import unsubscribe

    secret = "s" * 40
    ctx = context(listinfo_url=LISTINFO, member="ann@example.net", unsubscribe_secret=secret)
    d = draft()
    list_headers(ctx, d)
    f = dict(d.fields)
    assert f["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    url = f["List-Unsubscribe"].split(",")[0].strip("<>")
    token = url.rsplit("/", 1)[1]
    assert unsubscribe.verify(secret, token) == ("team.lists.example.org", "ann@example.net")
