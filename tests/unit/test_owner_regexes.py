"""Owner-written regular expressions cannot stall the milter (M5): a header match set
through REST, then posts decided by the real list engine; bans, address lists, aliases,
topics and the subject prefix with patterns that make Python's ``re`` backtrack for hours;
patterns RE2 cannot run refused where they are set, and ignored (logged) where stored."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import pytest
from sqlalchemy import Engine

from mtaplugin.copies.transforms.headers import prefixed_subject
from mtaplugin.engine import ListEngine
from mtaplugin.errors import InvalidInput
from mtaplugin.manage.patterns import check_regex
from mtaplugin.posting.verdict import Accept, Accepted, Discard, Held
from mtaplugin.regexes import MAX_LENGTH, compile_pattern
from mtaplugin.vocabulary.addresses import listed
from mtaplugin.vocabulary.bans import BanList
from mtaplugin.vocabulary.topics import compile_topics
from tests.helpers import envelope, make_post
from tests.unit.sites import Site
from tests.unit.test_api import Api, api_for

#: exponential for a backtracking engine: 2**40 ways to split the a's before the "!"
BOMBS = ("^(a+)+$", "^(a|a)+$", "^(a|aa)+$")
VICTIM = "a" * 48 + "!"


@pytest.fixture
def api(module_db_url: str, module_engine: Engine) -> Api:
    return api_for(module_db_url, module_engine)


def outcome(engine: ListEngine, site: Site, subject: str) -> object:
    raw = make_post("anne@example.com", site.addr("team"), subject=subject)
    verdict = engine.decide(envelope(site.addr("team"), mail_from="anne@example.com"), raw)
    assert isinstance(verdict, Accept | Discard)
    (found,) = verdict.outcomes
    return found


@pytest.mark.timeout(120)
def test_a_backtracking_header_match_set_through_rest_decides_at_once(
    api: Api, engine: ListEngine, site: Site
) -> None:
    """The attack of M5: the owner adds ``Subject: ^(a+)+$`` (hold), anyone posts 48 a's
    and a "!".  The post is decided (no match: accepted) instead of stalling the milter;
    a subject the pattern does match is held."""
    list_id = f"team.{site.host}"
    for pattern in BOMBS:
        form = urlencode({"header": "Subject", "pattern": pattern, "action": "hold"})
        r = api.post(f"lists/{list_id}/header-matches", form)
        assert r.status_code == 201, r.text
    try:
        assert isinstance(outcome(engine, site, VICTIM), Accepted)
        assert isinstance(outcome(engine, site, "a" * 48), Held)
    finally:
        assert api.delete(f"lists/{list_id}/header-matches").status_code == 204


@pytest.mark.timeout(120)
@pytest.mark.parametrize("bomb", BOMBS)
def test_every_owner_pattern_runs_in_linear_time(bomb: str) -> None:
    victim = VICTIM + "@example.com"
    assert BanList.of([bomb]).matches(victim) is False
    assert listed(victim, [bomb]) is False
    (topic,) = compile_topics([("t", bomb.lstrip("^"), "")], "a test")
    assert topic.pattern.search(VICTIM) is False
    assert compile_pattern(bomb).search("a" * 48) is True


@pytest.mark.timeout(120)
def test_a_subject_prefix_of_many_numbers_is_matched_in_linear_time() -> None:
    prefix = "[%d%d%d%d%d%d%d%d%d%d]"
    subject = "[" + "1" * 200 + " x"
    assert prefixed_subject(prefix, subject, 7) == f"[7777777777] {subject}"
    assert prefixed_subject(prefix, "Re: [1234567890] hello", 7) == "[7777777777] Re: hello"


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"^(a)\1$", "invalid escape"),
        (r"^(?!bob)", "invalid perl operator"),
        ("^(a{1000}){1000}$", "repetition"),
        ("^" + "a" * MAX_LENGTH, f"at most {MAX_LENGTH} characters"),
        ("^[unclosed", "missing"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_where_it_is_set(
    api: Api, site: Site, pattern: str, why: str
) -> None:
    with pytest.raises(InvalidInput, match=why) as err:
        check_regex("pattern", pattern)
    assert err.value.field == "pattern"
    form = urlencode({"header": "Subject", "pattern": pattern})
    r = api.post(f"lists/team.{site.host}/header-matches", form)
    assert r.status_code == 400 and "pattern" in r.text and why in r.text


def test_a_stored_pattern_re2_cannot_run_matches_nothing_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mtaplugin.regexes"):
        bans = BanList.of(["^(?!nobody@).*$", "carl@example.com"], "the bans of a test")
    assert not bans.matches("anne@example.com") and bans.matches("carl@example.com")
    assert "ignoring the regular expression '^(?!nobody@).*$' in the bans of a test" in (
        caplog.text
    )
