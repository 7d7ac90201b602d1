"""One ``decision`` line per list and post, with the fields an admin greps for: an
accepted, a refused, a held post, and a post that could not be decided."""

from __future__ import annotations

import logging
import re

import pytest
from sqlalchemy.exc import OperationalError

from mtaplugin.engine import ListEngine, decision_log
from mtaplugin.enums import Action
from mtaplugin.manage import lists
from mtaplugin.posting.rules.moderation import NONMEMBER_MODERATION
from mtaplugin.vocabulary.envelope import Envelope
from tests import helpers
from tests.helpers import make_post
from tests.unit.sites import Site

FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def envelope(*recipients: str, mail_from: str) -> Envelope:
    return helpers.envelope(*recipients, mail_from=mail_from, queue_id="4QUEUEID")


def decisions(caplog: pytest.LogCaptureFixture) -> list[dict[str, str]]:
    """The decision lines logged, as dictionaries (quotes taken off)."""
    found = []
    for rec in caplog.records:
        if rec.name != "mtaplugin.decision":
            continue
        text = rec.getMessage()
        assert text.startswith("decision ")
        assert "\n" not in text
        found.append({k: v.strip('"') for k, v in FIELD.findall(text)})
    return found


@pytest.fixture(autouse=True)
def info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mtaplugin.decision")


def test_an_accepted_post(engine: ListEngine, site: Site, caplog):
    raw = make_post("anne@example.com", site.addr("team"))
    msgid = decision_log.message_id(raw)
    assert msgid.startswith("<") and msgid.endswith("@client.test>")
    engine.decide(envelope(site.addr("team"), mail_from="anne@example.com"), raw)
    (one,) = decisions(caplog)
    assert one == {
        "queue_id": "4QUEUEID",
        "message_id": msgid,
        "from": "anne@example.com",
        "list": site.addr("team"),
        "outcome": "accepted",
        "rule": "-",
        "reply": "250",
        "smtp": "250",
    }


def test_a_held_post_names_the_rule_and_the_held_id(engine: ListEngine, site: Site, caplog):
    raw = make_post("stranger@example.net", site.addr("team"))
    engine.decide(envelope(site.addr("team"), mail_from="stranger@example.net"), raw)
    (one,) = decisions(caplog)
    (held,) = site.held()
    assert one["outcome"] == "held"
    assert one["rule"] == NONMEMBER_MODERATION
    assert one["held_id"] == str(held.id)
    assert (one["reply"], one["smtp"], one["list"]) == ("250", "250", site.addr("team"))
    assert one["message_id"] == held.message_id


def test_a_refused_post_names_the_rule_and_the_reply(engine: ListEngine, site: Site, caplog):
    with site.sessions.begin() as s:
        lists.create(s, site.addr("strict")).default_nonmember_action = Action.reject
    raw = make_post("stranger@example.net", site.addr("strict"))
    engine.decide(envelope(site.addr("strict"), mail_from="stranger@example.net"), raw)
    (one,) = decisions(caplog)
    assert one["outcome"] == "refused"
    assert one["rule"] == NONMEMBER_MODERATION
    assert one["reply"] == "550 5.7.1" and one["smtp"] == "550 5.7.1"
    assert one["list"] == site.addr("strict")
    assert one["queue_id"] == "4QUEUEID"


def test_one_line_per_list_and_none_for_other_mail(engine: ListEngine, site: Site, caplog):
    with site.sessions.begin() as s:
        lists.create(s, site.addr("strict")).default_nonmember_action = Action.reject
    raw = make_post("stranger@example.net", site.addr("team"))
    engine.decide(
        envelope(site.addr("team"), site.addr("strict"), "x@else.test", mail_from="s@x.test"), raw
    )
    found = decisions(caplog)
    assert [(d["list"], d["outcome"], d["smtp"]) for d in found] == [
        (site.addr("team"), "held", "250"),
        (site.addr("strict"), "refused", "250"),
    ]
    caplog.clear()
    engine.decide(envelope("friend@else.test", mail_from="s@x.test"), make_post("a@b.c", "d@e.f"))
    assert decisions(caplog) == []


def test_a_post_that_cannot_be_decided_is_logged_as_tempfail(
    engine: ListEngine, site: Site, caplog, monkeypatch
):
    def down(*args: object) -> object:
        raise OperationalError("SELECT", {}, Exception("database is locked"))

    monkeypatch.setattr(engine, "_decide", down)
    raw = make_post("anne@example.com", site.addr("team"))
    verdict = engine.decide(envelope(site.addr("team"), mail_from="anne@example.com"), raw)
    (one,) = decisions(caplog)
    assert one["outcome"] == "tempfail" and one["list"] == "-"
    assert one["smtp"] == f"{verdict.reply.code} {verdict.reply.enhanced}"  # type: ignore[union-attr]
    assert one["smtp"].startswith("4")
    assert one["to"] == site.addr("team")


def test_values_with_spaces_are_quoted_and_the_message_id_is_unfolded():
    assert decision_log.value("a b") == '"a b"'
    assert decision_log.value('say "hi"') == '"say \\"hi\\""'
    assert decision_log.value("") == "-"
    raw = b"Subject: x\r\nMessage-ID:\r\n <folded@host>\r\n\r\nMessage-ID: <body@no>\r\n"
    assert decision_log.message_id(raw) == "<folded@host>"
    assert decision_log.message_id(b"Subject: none\n\nbody") == ""
