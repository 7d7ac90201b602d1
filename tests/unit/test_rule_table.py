"""The posting-rule table is the one truth: docs/rules.md's table, the rule modules' id
constants, the refusal texts and each rule's hits agree with it."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from mtaplugin.enums import Action
from mtaplugin.model import MailingList
from mtaplugin.posting import content_filter, pipeline
from mtaplugin.posting.pipeline import POSTING_RULES, RuleMismatch, run_rules
from mtaplugin.posting.rules.base import Hit, PostContext, Rule
from mtaplugin.vocabulary.envelope import Envelope, Post

RULES_DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
_ROW = re.compile(r"^\| `(?P<id>[a-z-]+)` \| (?P<does>[^|]+?) \|")


def documented_rules() -> list[tuple[str, str]]:
    """(id, "Does" column) of each row of the table under "## The posting rules"."""
    text = RULES_DOC.read_text()
    section = text.split("## The posting rules", 1)[1].split("\n#", 1)[0]
    return [(m["id"], m["does"]) for line in section.splitlines() if (m := _ROW.match(line))]


def test_the_rules_doc_lists_every_rule_in_order_with_what_it_does():
    assert documented_rules() == [(r.id, r.does) for r in POSTING_RULES]


def test_rule_ids_are_unique_and_spelt_as_their_constants():
    ids = [r.id for r in POSTING_RULES]
    assert len(set(ids)) == len(ids)
    for rule in POSTING_RULES:
        module = importlib.import_module(rule.check.__module__)
        # One naming style: the constant is the id in capitals (max-size: MAX_SIZE).
        assert getattr(module, rule.id.upper().replace("-", "_")) == rule.id
        # The check is spelt like its id too.
        assert rule.check.__name__ == rule.id.replace("-", "_")


def test_a_rule_with_no_action_of_its_own_names_where_it_comes_from():
    for rule in POSTING_RULES:
        assert (rule.action is None) == bool(rule.decides), rule.id


def test_refusal_text_keys_are_rule_ids():
    known = {r.id for r in POSTING_RULES} | {content_filter.RULE, "*"}
    assert set(pipeline.default_refusal_texts()) <= known
    # The rules doc's example of a list's own refusal_texts names real keys too.
    example = RULES_DOC.read_text().split("per rule in `refusal_texts` (", 1)[1].split(")", 1)[0]
    assert set(re.findall(r'"([^"]+)":', example)) <= known


def _ctx() -> PostContext:
    raw = b"From: ann@example.com\r\nSubject: hi\r\n\r\nbody\r\n"
    return PostContext(mlist=MailingList(), post=Post(raw), envelope=Envelope(), sender="ann")


@pytest.mark.parametrize(
    "hit",
    [Hit("another-rule", Action.reject, "x"), Hit("no-senders", Action.hold, "x")],
)
def test_a_hit_that_disagrees_with_the_table_is_a_bug(hit: Hit):
    rule = Rule("no-senders", Action.reject, lambda ctx: hit)
    with pytest.raises(RuleMismatch):
        run_rules(_ctx(), (rule,))


def test_a_rule_whose_action_comes_from_a_setting_may_take_any():
    rule = Rule("header-match", None, lambda ctx: Hit("header-match", Action.discard, "x"), "its")
    deciding, _hits = run_rules(_ctx(), (rule,))
    assert deciding is not None and deciding.action is Action.discard
