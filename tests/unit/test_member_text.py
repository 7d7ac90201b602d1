"""notices/member_text.py and member_batch.py: a notice rendered once and filled in with
each member's address is the notice rendered for that member; a template that uses the
address in any other way is rendered for each member; the headers made once are the email
package's."""

from __future__ import annotations

import re

import pytest

from mtaplugin.i18n import available_languages
from mtaplugin.notices import build
from mtaplugin.notices.member_batch import Letter, plain
from mtaplugin.notices.member_text import plan, substitutable
from mtaplugin.notices.templates import render
from tests.helpers import detached_list

WRAP = "{% filter wordwrap %}"
ADDRESSES = [
    "a@x.example",
    "m1-3@members.example",
    "first.last+tag@example.org",
    "very-long-local-part-for-wrapping.and.more@sub.long-domain.example",
    "ab-cd-ef@hyphen-ated.example",
]


@pytest.mark.parametrize("language", available_languages())
@pytest.mark.parametrize("name", ["list:user:notice:welcome", "list:user:notice:goodbye"])
def test_a_planned_notice_is_the_rendered_one_in_every_language(language: str, name: str):
    mlist = detached_list(
        list_name="team",
        mail_host="lists.example",
        display_name="The team",
        info="What the list is about, in a line long enough that it has to be wrapped once.",
    )
    text = plan(name, language, session=None, mlist=mlist)
    assert text is not None
    for email in ADDRESSES:
        assert text.fill(email) == render(name, language, mlist=mlist, user_email=email)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Hello {{ user_email }}.", True),
        ("{% trans %}You are {{ user_email }}{% endtrans %}", True),
        ("{% filter wordwrap(20) %}{% if info %}{{ user_email }}{% endif %}{% endfilter %}", True),
        ("{% for x in [1, 2] %}{{ user_email }}{% endfor %}", True),
        ("No address at all.", True),
        ("{{ user_email|upper }}", False),
        ("{{ user_email ~ '!' }}", False),
        ("{{ user_email[0] }}", False),
        ("{% if user_email %}x{% endif %}", False),
        ("{% set user_email = 'x' %}{{ user_email }}", False),
        ("{% set x = user_email %}{{ x }}", False),
        ("{% set x %}{{ user_email }}{% endset %}{{ x|length }}", False),
        ("{% filter upper %}{{ user_email }}{% endfilter %}", False),
        ("{% filter wordwrap|upper %}{{ user_email }}{% endfilter %}", False),
        ("{% filter upper|wordwrap %}{{ user_email }}{% endfilter %}", False),
        (WRAP + WRAP + "{{ user_email }}{% endfilter %}{% endfilter %}", False),
        ("{% filter wordwrap(user_email|length) %}x{% endfilter %}", False),
        ("{% trans e=user_email|upper %}{{ e }}{% endtrans %}", False),
        (
            "{% macro gettext(s) %}{{ kwargs.user_email|upper }}{% endmacro %}"
            "{{ gettext('x', user_email=user_email) }}",
            False,
        ),
        ("{% set gettext = lipsum %}{% trans %}{{ user_email }}{% endtrans %}", False),
        ("{% macro m() %}{{ user_email }}{% endmacro %}{{ m()|upper }}", False),
        ("{% include 'list:user:notice:welcome.txt' %}", False),
    ],
)
def test_only_a_template_that_writes_the_address_out_unchanged_is_planned(
    source: str, expected: bool
):
    assert substitutable(source) is expected


def stamps_out(raw: bytes) -> bytes:
    return re.sub(rb"(?m)^(Date|Message-ID): .*\n", b"", raw)


@pytest.mark.parametrize(
    "subject",
    ["Welcome", "Bienvenue sur « Équipe »", "A subject long enough to be folded " * 3],
)
@pytest.mark.parametrize("body", ["Hello a@x.example.\n\nBye.\n", "Grüße, a@x.example\n", ""])
def test_the_headers_made_once_are_the_email_package_s(subject: str, body: str):
    letter = Letter("team-request@lists.example", subject)
    for to in ("a@x.example", "m1-3@members.example"):
        raw = letter.raw(to, body)
        assert raw is not None
        assert stamps_out(raw) == stamps_out(build("team-request@lists.example", to, subject, body))


def test_what_the_email_package_would_encode_or_fold_is_left_to_it():
    letter = Letter("team-request@lists.example", "Welcome")
    assert letter.raw("a@x.example", "x" * 79 + "\n") is None
    assert letter.raw("a@x.example", "x" * 78 + "\n") is not None
    assert plain("first.last+tag@example.org")
    assert not plain("=?utf-8?q?x?=@example.org")
    assert not plain("x" * 70 + "@x.example")
    assert not plain("a..b@example.org")
