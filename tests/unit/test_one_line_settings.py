"""L1: a list setting whose texts go into header fields is one line, without control
characters, on every surface (REST, the web form, the model under imports and the CLI),
and the header-writing layer refuses a value that would start a field of its own."""

from __future__ import annotations

from email import message_from_bytes
from email.policy import compat32
from typing import Any

import pytest
from sqlalchemy import inspect
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from mtaplugin.api.resources.config import ATTRIBUTES
from mtaplugin.copies import transforms
from mtaplugin.enums import ReplyToMunging
from mtaplugin.errors import InvalidInput
from mtaplugin.importers import apply
from mtaplugin.importers.plan import Plan
from mtaplugin.manage import lists
from mtaplugin.model import MailingList
from mtaplugin.model.one_line import one_line_settings
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.vocabulary.draft import Draft, HeaderInjection
from tests.helpers import detached_list, make_post, unique
from tests.unit.test_api import Api, api  # noqa: F401  (a pytest fixture)
from tests.unit.webclient import Site

#: what a one-line text may not hold (the review's CRLF, a bare CR, NUL, DEL, U+2028)
BAD = ["\r\nX-Injected: yes", "\rBcc: x", "\nX: y", "\x00", "\x1b[0m", "\x7f", "\u2028", "\x85"]
INJECTION = 'Team"\r\nX-Injected: yes'


def _column_kind(name: str) -> str:
    return type(MailingList.__table__.c[name].type).__name__


def bad_value(name: str, bad: str) -> Any:
    """A value of setting ``name``'s shape that carries ``bad``."""
    if name == "topics":
        return [{"name": "t", "regex": "x", "description": f"d{bad}x"}]
    if _column_kind(name) == "JSON":
        return [f"a{bad}@example.org"]
    return f"x{bad}"


#: every one-line setting REST may write (moderator_password is hashed, never written out)
WRITABLE = sorted((one_line_settings() & set(ATTRIBUTES.writable)) - {"moderator_password"})


def test_the_one_line_settings_come_from_the_table():
    assert {"display_name", "subject_prefix", "description", "reply_to_address"} <= set(WRITABLE)
    assert {"acceptable_aliases", "topics", "filter_types", "linked_newsgroup"} <= set(WRITABLE)
    assert "info" not in one_line_settings()  # free text, many lines
    assert "refusal_texts" not in one_line_settings()  # SMTP wording, made one line there
    # every text column that is neither free text nor a choice is in the set
    for column in inspect(MailingList).columns:
        if _column_kind(column.key) == "String" and column.key != "moderator_password":
            assert column.key in one_line_settings(), column.key


# --- REST (falcon testing) -----------------------------------------------------------------
@pytest.fixture
def list_id(api: Api) -> str:  # noqa: F811  (test_api's fixture)
    host = f"{unique('one')}.test"
    assert api.post("domains", f"mail_host={host}").status_code == 201
    name = unique("l")
    assert api.post("lists", f"fqdn_listname={name}@{host}").status_code == 201
    return f"{name}.{host}"


@pytest.mark.parametrize("name", WRITABLE)
def test_rest_refuses_a_control_character_in_every_one_line_setting(
    api: Api,  # noqa: F811
    list_id: str,
    name: str,
):
    before = api.get(f"lists/{list_id}/config").json[name]
    for bad in BAD:
        r = api.call("PATCH", f"lists/{list_id}/config", json={name: bad_value(name, bad)})
        assert r.status_code == 400, (name, bad, r.text)
        assert f'Invalid Parameter "{name}"' in r.json["description"], r.text
        one = api.call("PUT", f"lists/{list_id}/config/{name}", json={name: bad_value(name, bad)})
        assert one.status_code == 400, (name, bad, one.text)
    assert api.get(f"lists/{list_id}/config").json[name] == before


def test_the_reviews_reply_to_injection_is_refused_and_changes_nothing(api: Api, list_id: str):  # noqa: F811
    r = api.call(
        "PATCH",
        f"lists/{list_id}/config",
        json={"display_name": INJECTION, "reply_goes_to_list": "point_to_list"},
    )
    assert r.status_code == 400 and 'Invalid Parameter "display_name"' in r.json["description"]
    config = api.get(f"lists/{list_id}/config").json
    assert config["display_name"] != INJECTION and config["reply_goes_to_list"] == "no_munging"


def test_reply_to_address_is_one_address(api: Api, list_id: str):  # noqa: F811
    for bad in ("^.*@example\\.org$", "^a\r\nBcc: x", "two@example.org, three@example.org"):
        r = api.call("PATCH", f"lists/{list_id}/config", json={"reply_to_address": bad})
        assert r.status_code == 400, bad
        assert 'Invalid Parameter "reply_to_address"' in r.json["description"]
    ok = api.call("PATCH", f"lists/{list_id}/config", json={"reply_to_address": "R@Example.org"})
    assert ok.status_code == 204
    assert api.get(f"lists/{list_id}/config/reply_to_address").json == {
        "reply_to_address": "r@example.org",
        "http_etag": api.get(f"lists/{list_id}/config/reply_to_address").json["http_etag"],
    }


def test_a_tab_and_other_texts_still_pass(api: Api, list_id: str):  # noqa: F811
    r = api.call(
        "PATCH",
        f"lists/{list_id}/config",
        json={
            "display_name": "Team\tOne",
            "description": "Ünïcode — fine",
            "subject_prefix": "[t] ",
        },
    )
    assert r.status_code == 204, r.text


# --- the web form --------------------------------------------------------------------------
@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


IDENTITY = {
    "display_name": "Team",
    "description": "The team",
    "info": "",
    "subject_prefix": "[T] ",
    "preferred_language": "en",
    "advertised": "",
    "member_roster_visibility": "moderators",
}


def test_the_web_form_refuses_a_bare_cr_or_a_nul_naming_the_field(site: Site):
    client = site.client()
    client.login(f"owner@{site.host}")
    action = f"/lists/{site.list_id}/settings/list-identity"
    bad = client.post(
        action,
        {
            **IDENTITY,
            "display_name": "Team\rBcc: x",
            "subject_prefix": "[t]\x00x",
            "description": "a\x85b",
        },
    )
    assert bad.status_code == 400
    for name in ("display_name", "subject_prefix", "description"):
        assert f"{name}: must be one line without control characters" in bad.text, name
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        assert (mlist.display_name, mlist.subject_prefix) != ("Team\rBcc: x", "[t]\x00x")
        assert "\r" not in mlist.display_name and "\x00" not in mlist.subject_prefix


def test_the_web_form_refuses_a_regex_or_a_control_character_as_reply_to_address(site: Site):
    client = site.client()
    client.login(f"owner@{site.host}")
    action = f"/lists/{site.list_id}/settings/alter-messages"
    from tests.unit.webclient import form_of

    sent = dict(form_of(client.get(action).text, action))
    for bad in ("^.*@example\\.org$", "a@example.org\x00"):
        got = client.post(action, {**sent, "reply_to_address": bad})
        assert got.status_code == 400 and "reply_to_address:" in got.text, bad
    with site.sessions() as s:
        assert lists.get(s, site.address).reply_to_address == ""


# --- the model: imports, lists create, anything that writes a setting ----------------------
def test_the_model_refuses_a_control_character_whoever_writes_it():
    mlist = detached_list(list_name="t", mail_host="example.org", list_id="t.example.org")
    for name in ("display_name", "description", "subject_prefix", "linked_newsgroup"):
        with pytest.raises(InvalidInput) as refused:
            setattr(mlist, name, "x\r\nX-Injected: yes")
        assert refused.value.field == name
    with pytest.raises(InvalidInput):
        mlist.acceptable_aliases = ["a@example.org\n"]
    with pytest.raises(InvalidInput):
        mlist.reply_to_address = "^.*"
    mlist.info = "many\nlines\nare fine here"  # free text
    mlist.topics = [["social", "dinner\nparty", "Social events"]]  # alternatives, one a line
    with pytest.raises(InvalidInput):
        mlist.topics = [["social", "dinner", "Social\r\nX: y"]]


def test_lists_create_refuses_a_display_name_with_a_line_break(txn_session: Session):
    from mtaplugin.manage import domains

    host = f"{unique('create')}.test"
    domains.create(txn_session, host)
    with pytest.raises(InvalidInput) as refused:
        lists.create(txn_session, f"t@{host}", display_name="T\nX-Injected: yes")
    assert refused.value.field == "display_name"


def test_an_import_leaves_a_bad_setting_out_with_a_note(txn_session: Session):
    from mtaplugin.manage import domains

    host = f"{unique('imp')}.test"
    domains.create(txn_session, host)
    plan = Plan(f"team@{host}")
    plan.settings = {"display_name": INJECTION, "description": "fine", "subject_prefix": "[t]\r"}
    report = apply.apply(txn_session, plan)
    mlist = lists.get(txn_session, f"team@{host}")
    assert mlist.description == "fine"
    assert "\r" not in mlist.display_name and "\r" not in mlist.subject_prefix
    notes = "\n".join(report.notes)
    assert "display_name" in notes and "subject_prefix" in notes and "refused here" in notes


# --- the header-writing layer: the last line of defence ------------------------------------
@pytest.mark.parametrize(
    "value", ["a\r\nX-Injected: yes", "a\nX-Injected: yes", "a\rb", "a\r\n \r\nbody", "a\n"]
)
def test_draft_refuses_a_value_that_would_start_a_field(value: str):
    d = Draft([("Subject", "x")], b"body\r\n")
    for write in (d.set, d.append, d.prepend):
        with pytest.raises(HeaderInjection):
            write("Reply-To", value)
    assert d.fields == [("Subject", "x")]
    with pytest.raises(HeaderInjection):
        d.append("Bad Name", "x")


def test_draft_keeps_a_folded_value():
    d = Draft([], b"")
    d.set("Subject", "=?utf-8?q?a?=\r\n =?utf-8?q?b?=")
    d.append("X-Long", "one\n\ttwo")
    assert len(d.fields) == 2


def test_a_value_stored_before_the_check_cannot_reach_a_copy():
    """A list whose display_name got a line break before this check (written straight
    into the database): making its copy fails (the post waits, 4xx) instead of carrying
    the injected field."""
    mlist = detached_list(
        list_name="t",
        mail_host="example.org",
        list_id="t.example.org",
        reply_goes_to_list=ReplyToMunging.point_to_list,
    )
    set_committed_value(mlist, "display_name", INJECTION)
    raw = make_post("ann@example.com", "t@example.org")
    with pytest.raises(HeaderInjection):
        transforms.members_copy(TransformContext(mlist), raw)
    set_committed_value(mlist, "display_name", "Team")
    copy = message_from_bytes(
        transforms.members_copy(TransformContext(mlist), raw), policy=compat32
    )
    assert copy["X-Injected"] is None and "Team" in str(copy["Reply-To"])
