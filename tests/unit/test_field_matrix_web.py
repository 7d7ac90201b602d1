"""The access matrix at the level of fields: the web forms (issue 30, deliverable 2; the
REST API and what is tried: tests/unit/test_field_matrix.py).

Every field of the list-settings pages (``list_settings.GROUPS``, each of its column's
kind) is set by owners only and refuses the bad values of its kind; every other POST form
is read from the templates (tests/unit/web_field_rows.py), and each refused value answers
400 naming the field with nothing changed."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlencode

from falcon import testing
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.manage import lists
from mtaplugin.manage.patterns import ADDRESS_PATTERN_SETTINGS
from mtaplugin.model import Address, Ban, Domain, HeaderMatch, MailingList, Member, RosterSource
from mtaplugin.web import list_settings
from tests.unit import doors as d
from tests.unit import web_field_rows as web
from tests.unit.field_site import LOGGED_IN, Site
from tests.unit.field_site import site as site
from tests.unit.test_access_matrix import expected
from tests.unit.webclient import form_of


def test_every_web_form_field_has_a_row() -> None:
    """Each POST form of the templates (its operation and its fields) is a row of
    web_field_rows.FORMS, and each row a form; the settings pages' fields are GROUPS."""
    rendered = sorted((t, ops, tuple(sorted(names))) for t, ops, names in web.forms_in_templates())
    table = sorted((f.template, f.ops, tuple(sorted(f.fields))) for f in web.FORMS)
    assert rendered == table
    grouped = [n for _title, names in list_settings.GROUPS.values() for n in names]
    assert len(grouped) == len(set(grouped))
    for name in grouped:
        list_settings.field_of(name)  # a kind for every one (else AssertionError)


def _settings_form(doors: d.Doors, group: str) -> list[tuple[str, str]]:
    action = f"/lists/{d.list_id('own_list')}/settings/{group}"
    page = doors.request("web", "owner", "GET", action)
    assert page.status_code == 200, page.status_code
    return form_of(page.text, action)


def _good(fld: list_settings.Field, now: str) -> str:
    """A value of the field's kind other than ``now``."""
    special = {"display_name": "Renamed", "reply_to_address": "team@example.org"}
    if fld.name in special:
        return special[fld.name]
    if fld.kind == "bool":
        return "" if now else "1"
    if fld.kind in ("choice", "language"):
        return next(c for c in fld.choices if c != now)
    if fld.kind in ("int", "days"):
        return "3" if now != "3" else "4"
    if fld.kind == "lines":
        if fld.name == "topics":
            return "news | News | ^news"
        return "^.*@example\\.org$" if fld.name in ADDRESS_PATTERN_SETTINGS else "text/html"
    return "A changed text."


def _bad(fld: list_settings.Field) -> tuple[str, ...]:
    """The values of the field's kind the page refuses."""
    if fld.name == "display_name":
        return ("", "x" * (fld.max_length + 1))
    if fld.name == "reply_to_address":
        return ("not an address",)
    if fld.name == "topics":
        return ("no regex here",)
    return {
        "int": ("x",) if fld.name == "topics_bodylines_limit" else ("x", "-1"),
        "days": ("soon", "9999"),
        "choice": ("no-such-choice",),
        "language": ("xx-nowhere",),
        "lines": ("not an address", "^(unclosed") if fld.name in ADDRESS_PATTERN_SETTINGS else (),
        "line": ("x" * (fld.max_length + 1), "two\nlines") if fld.max_length else ("two\nlines",),
    }.get(fld.kind, ())


def _post(
    doors: d.Doors, role: str, path: str, pairs: list[tuple[str, str]], keep: bool = False
) -> testing.Result:
    return doors.request("web", role, "POST", path, form=urlencode(pairs), keep=keep)


def _stored(doors: d.Doors, fld: list_settings.Field) -> str:
    with Session(bind=doors.conn) as s:
        return list_settings.shown_value(lists.get(s, d.LIST["own_list"]), fld)


def _settings(doors: d.Doors) -> Iterator[tuple[str, list[tuple[str, str]], list_settings.Field]]:
    """(the group's path, its form as shown, a field) for every list setting."""
    for group in list_settings.GROUPS:
        pairs = _settings_form(doors, group)
        for fld in list_settings.fields(group):
            yield f"/lists/{d.list_id('own_list')}/settings/{group}", pairs, fld


def test_each_settings_page_is_posted_by_owners_only(site: Site) -> None:
    wrong = []
    for group in list_settings.GROUPS:
        pairs = _settings_form(site.doors, group)
        path = f"/lists/{d.list_id('own_list')}/settings/{group}"
        for role in LOGGED_IN:
            got = _post(site.doors, role, path, pairs).status_code
            want = expected("web", "list_admin", role, "own_list", 303)
            if got != want:
                wrong.append(f"{group} as {role}: {got}, not {want}")
    assert wrong == [], "\n".join(wrong)


def test_each_list_setting_is_set_on_the_web_by_owners(site: Site) -> None:
    doors = site.doors
    wrong = []
    for path, pairs, fld in _settings(doors):
        now = dict(pairs).get(fld.name, "")
        value = _good(fld, now)
        changed = [(k, v) for k, v in pairs if k != fld.name] + [(fld.name, value)]
        point = doors.conn.begin_nested()
        try:
            got = _post(doors, "owner", path, changed, keep=True)
            stored = _stored(doors, fld)
            taken = stored == value or (fld.name == "topics" and stored != now)
            if got.status_code != 303 or not taken:
                wrong.append(f"{fld.name}={value!r}: {got.status_code}, stored {stored!r}")
        finally:
            point.rollback()
    assert wrong == [], "\n".join(wrong)


def test_each_refused_setting_names_its_field_and_changes_nothing(site: Site) -> None:
    doors = site.doors
    wrong = []
    for path, pairs, fld in _settings(doors):
        for value in _bad(fld):
            before = _stored(doors, fld)
            sent = [(k, v) for k, v in pairs if k != fld.name] + [(fld.name, value)]
            got = _post(doors, "owner", path, sent)
            if got.status_code != 400 or f"{fld.name}: " not in got.text:
                wrong.append(f"{fld.name}={value[:20]!r}: {got.status_code}")
            if _stored(doors, fld) != before:
                wrong.append(f"{fld.name}={value[:20]!r}: changed")
    assert wrong == [], "\n".join(wrong)


def _counts(doors: d.Doors) -> dict[str, object]:
    with Session(bind=doors.conn) as s:
        return {
            model.__name__: s.scalar(select(func.count()).select_from(model))
            for model in (Domain, MailingList, Member, Address, Ban, HeaderMatch, RosterSource)
        } | {"aliases": sorted(str(a) for a in s.scalars(select(Domain.alias_domain)))}


def test_each_refused_web_value_names_its_field_and_changes_nothing(site: Site) -> None:
    doors = site.doors
    before = _counts(doors)
    wrong = []
    for form in web.FORMS:
        for name, w in form.fields.items():
            for value in w.bad:
                sent = {**form.base, name: value}
                if sent.get("member_id") == web.MEMBER_ID:
                    sent["member_id"] = doors.seeded.member_ids["own_list"]
                got = _post(doors, form.role, form.path, list(sent.items()))
                if got.status_code != 400 or (w.says or f"{name}:") not in got.text:
                    wrong.append(f"{form.template} {name}={value!r}: {got.status_code}")
                elif _counts(doors) != before:
                    wrong.append(f"{form.template} {name}={value!r}: something changed")
    assert wrong == [], "\n".join(wrong)


def test_web_values_only_the_site_admin_may_give(site: Site) -> None:
    doors = site.doors
    wrong = []
    for form in web.FORMS:
        for name, w in form.fields.items():
            for value in w.site_only:
                sent = list({**form.base, name: value}.items())
                got = _post(doors, form.role, form.path, sent)
                if got.status_code != 400 or f"{name}:" not in got.text:
                    wrong.append(f"{form.template} {name}={value!r} as {form.role}")
                if _post(doors, "site_admin", form.path, sent).status_code != 303:
                    wrong.append(f"{form.template} {name}={value!r} as the site admin")
    assert wrong == [], "\n".join(wrong)
