"""The access matrix at the level of fields (issue 30, deliverable 2).

tests/unit/test_access_matrix.py tries every route with an empty body: it sees who passes
each door, not what they may write behind it.  Here every field a REST write takes
(tests/unit/field_rows.py) and every field of the web's list-settings forms
(``list_settings.GROUPS``, tests/unit/web_field_rows.py for the other forms) is tried:

- **who may set it**: each logged-in role sends a good value; the roles the field's rule
  allows get the route's answer, the others are refused (nothing changes);
- **which values are refused**: each refused value answers 400 naming the field, and
  nothing of the same request is kept;
- **values only the site admin may give** (an ``alias_domain``, a ``file:`` URI): refused
  to everybody else, taken from the site admin.

The fields come from the code's own tables (the REST config attributes, the settings
groups, the template names, the preferences, the roster-source fields) or are recorded from
the running app (what each responder passes to ``Params.only``; the forms the web's
templates render): a field without a row, or a row without a field, fails.  Every request
runs in a SAVEPOINT that is rolled back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from falcon import testing
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin import passwords
from mtaplugin.api import dialect
from mtaplugin.manage import lists
from mtaplugin.manage.patterns import ADDRESS_PATTERN_SETTINGS
from mtaplugin.model import Address, Ban, Domain, HeaderMatch, MailingList, Member, RosterSource
from mtaplugin.web import list_settings
from tests.unit import doors as d
from tests.unit import field_rows as rows
from tests.unit import web_field_rows as web
from tests.unit.test_access_matrix import (
    administers,
    expected,
    fill,
    moderates,
    owns_domain,
    routes,
)
from tests.unit.webclient import CHEAP_PASSWORDS, form_of

LOGGED_IN = [r for r in d.ROLES if r != "anonymous"]
#: refusals in Mailman 3's own words (its clients read them), which do not name the field
MAILMAN_WORDS = {
    ("POST", "/domains", "mail_host", d.HOST_A): "Duplicate email host: ",
    ("POST", "/members", "list_id", "no.such.list"): "No such list",
    ("POST", "/members", "subscriber", "not an address"): "No such user: ",
}
#: a route's path parameters filled for the field's writes (the probe of Params.only too)
PROBE_FILL = {"/queues/{name}": {"name": "out"}}


def allowed(rule: str, role: str, target: str) -> bool:
    return {
        "site": role == "site_admin",
        "list_admin": administers(role, target),
        "list_read": moderates(role, target),
        "domain": owns_domain(role, target),
        "self": role == "site_admin" or (role == "member" and target == "own_list"),
        "staff": role in ("owner", "domain_owner", "site_admin"),
    }[rule]


def edge_roles(rule: str, target: str) -> list[str]:
    """The weakest role the rule allows and the denied roles next to an allowed one (in
    the order member, moderator, owner, domain owner, site admin): where a rule that is
    off by one would show."""
    ok = [allowed(rule, role, target) for role in LOGGED_IN]
    edge = {LOGGED_IN[ok.index(True)]}
    for i, role in enumerate(LOGGED_IN):
        near = [ok[j] for j in (i - 1, i + 1) if 0 <= j < len(ok)]
        if not ok[i] and any(near):
            edge.add(role)
    return [r for r in LOGGED_IN if r in edge]


@dataclass
class Site:
    doors: d.Doors
    #: (method, route) -> the fields its responder passed to Params.only
    recorded: dict[tuple[str, str], set[str]]


@pytest.fixture(scope="module")
def site(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    mp = pytest.MonkeyPatch()
    mp.setattr(passwords, "PASSWORDS", CHEAP_PASSWORDS)
    seen: list[set[str]] = []
    only = dialect.Params.only

    def recording(self: dialect.Params, allowed: Any) -> None:
        seen.append(set(allowed))
        only(self, allowed)

    mp.setattr(dialect.Params, "only", recording)
    try:
        for doors in d.make_doors(module_db_url, tmp_path_factory.mktemp("var")):
            recorded: dict[tuple[str, str], set[str]] = {}
            for method, template in routes(doors, "api"):
                if method == "GET":
                    continue
                seen.clear()
                doors.request("api", "site_admin", method, "/3.1" + path_of(doors, template))
                recorded[(method, template)] = set().union(*seen)
            mp.setattr(dialect.Params, "only", only)
            yield Site(doors, recorded)
    finally:
        mp.undo()


def path_of(doors: d.Doors, template: str, target: str = "own_list", name: str = "") -> str:
    for param, value in PROBE_FILL.get(template, {}).items():
        template = template.replace("{" + param + "}", value)
    if name and "{attribute}" in template:
        template = template.replace("{attribute}", name)
    return fill(doors, "api", template, target)


def body(route: rows.Route, name: str, value: str) -> str:
    sent = dict(parse_qsl(route.base, keep_blank_values=True))
    sent[name] = value
    return urlencode(sent)


def send(
    site: Site, role: str, method: str, template: str, name: str, value: str
) -> testing.Result:
    route = rows.ROUTES[(method, template)]
    target = "own_list" if route.target == "site" else route.target
    path = "/3.1" + path_of(site.doors, template, target, name)
    if method == "DELETE":  # (the doors send no body with a DELETE: the query string)
        return site.doors.request("api", role, method, f"{path}?{body(route, name, value)}")
    return site.doors.request("api", role, method, path, form=body(route, name, value))


def described(result: testing.Result) -> str:
    try:
        return str(json.loads(result.text).get("description", ""))
    except ValueError:
        return result.text


def field_rows() -> list[tuple[str, str, str, rows.Field]]:
    return [
        (method, template, name, row)
        for (method, template), route in rows.ROUTES.items()
        for name, row in route.fields.items()
    ]


# --- the inventory ----------------------------------------------------------------------------
def test_every_writable_rest_field_has_a_row(site: Site) -> None:
    """Each write route's fields (recorded from Params.only, else the code's table) are
    exactly the rows of field_rows.ROUTES; a new field, or a new write route, fails here."""
    wrong = []
    for (method, template), fields in sorted(site.recorded.items()):
        if (method, template) in rows.QUERIES:
            continue
        table = set(rows.TABLES.get((method, template), ())) or fields
        table -= {"count", "page"}
        route = rows.ROUTES.get((method, template))
        if route is None:
            if table:
                wrong.append(f"{method} {template}: no rows for {sorted(table)}")
            continue
        if set(route.fields) != table:
            wrong.append(
                f"{method} {template}: fields {sorted(table)}, rows {sorted(route.fields)}"
            )
    stale = set(rows.ROUTES) - set(site.recorded)
    assert wrong == [] and stale == set()


# --- who may set which field --------------------------------------------------------------------
def test_each_field_is_set_by_the_roles_its_rule_allows_only(site: Site) -> None:
    wrong = []
    for method, template, name, row in field_rows():
        if row.good is None:
            continue
        route = rows.ROUTES[(method, template)]
        target = "own_list" if route.target == "site" else route.target
        want_ok = route.ok_for.get(name, route.ok)
        tried = edge_roles(row.rule, target) if route.generated else LOGGED_IN
        for role in tried:
            got = send(site, role, method, template, name, row.good)
            ok = allowed(row.rule, role, target)
            if ok and got.status_code != want_ok:
                wrong.append(
                    f"{method} {template} {name}={row.good!r} as {role}: "
                    f"{got.status_code} {described(got)[:100]}"
                )
            if not ok and got.status_code < 400:
                wrong.append(f"{method} {template} {name} as {role}: {got.status_code}")
    assert wrong == [], f"{len(wrong)} answers differ:\n" + "\n".join(wrong)


def test_a_field_behind_a_door_is_refused_to_who_may_not_pass(site: Site) -> None:
    """The fields tried with no good value: any value, refused to the roles the rule
    does not allow (the door is the route's; the rule says which)."""
    wrong = []
    for method, template, name, row in field_rows():
        if row.good is not None:
            continue
        route = rows.ROUTES[(method, template)]
        target = "own_list" if route.target == "site" else route.target
        for role in LOGGED_IN:
            if allowed(row.rule, role, target):
                continue
            got = send(site, role, method, template, name, "x")
            if got.status_code != 403:
                wrong.append(f"{method} {template} {name} as {role}: {got.status_code}")
    assert wrong == []


# --- which values are refused -------------------------------------------------------------------
def test_each_refused_value_names_its_field_and_changes_nothing(site: Site) -> None:
    wrong = []
    for method, template, name, row in field_rows():
        for value in row.bad:
            got = send(site, "site_admin", method, template, name, value)
            words = MAILMAN_WORDS.get((method, template, name, value), f'"{name}"')
            if got.status_code != 400 or words not in described(got):
                wrong.append(
                    f"{method} {template} {name}={value[:30]!r}: "
                    f"{got.status_code} {described(got)[:100]}"
                )
    assert wrong == [], f"{len(wrong)} refusals differ:\n" + "\n".join(wrong)


def test_values_only_the_site_admin_may_give(site: Site) -> None:
    wrong = []
    for method, template, name, row in field_rows():
        route = rows.ROUTES[(method, template)]
        target = "own_list" if route.target == "site" else route.target
        tried = edge_roles(row.rule, target) if route.generated else LOGGED_IN
        for value in row.site_only:
            for role in sorted({*tried, "site_admin"}, key=LOGGED_IN.index):
                got = send(site, role, method, template, name, value)
                if role == "site_admin":
                    if got.status_code != route.ok_for.get(name, route.ok):
                        wrong.append(f"{method} {template} {name}={value!r} as the site admin")
                elif allowed(row.rule, role, target) and not (
                    got.status_code == 403 or (got.status_code == 400 and name in described(got))
                ):
                    wrong.append(
                        f"{method} {template} {name}={value!r} as {role}: "
                        f"{got.status_code} {described(got)[:100]}"
                    )
                elif got.status_code < 400:
                    wrong.append(f"{method} {template} {name}={value!r} as {role}: taken")
    assert wrong == [], "\n".join(wrong)


def test_a_refused_field_keeps_the_rest_of_the_request_from_being_kept(site: Site) -> None:
    """One good setting and one bad one in the same PATCH: 400, and the good one is not
    stored either (each list setting tried)."""
    doors = site.doors
    path = "/3.1" + path_of(doors, "/lists/{list}/config")
    wrong = []
    for name, row in rows.config_fields().items():
        for value in row.bad[:1]:
            point = doors.conn.begin_nested()
            try:
                form = urlencode({"description": "kept?", name: value})
                got = doors.request("api", "owner", "PATCH", path, form=form, keep=True)
                after = doors.request("api", "owner", "GET", path)
                if got.status_code != 400 or json.loads(after.text)["description"] == "kept?":
                    wrong.append(f"{name}={value[:20]!r}: {got.status_code}")
            finally:
                point.rollback()
    assert wrong == []


# --- the web forms ------------------------------------------------------------------------------
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


def test_each_list_setting_is_set_on_the_web_by_owners_only(site: Site) -> None:
    doors = site.doors
    wrong = []
    for group in list_settings.GROUPS:
        pairs = _settings_form(doors, group)
        path = f"/lists/{d.list_id('own_list')}/settings/{group}"
        for role in LOGGED_IN:
            got = _post(doors, role, path, pairs).status_code
            want = expected("web", "list_admin", role, "own_list", 303)
            if got != want:
                wrong.append(f"{group} as {role}: {got}, not {want}")
        for fld in list_settings.fields(group):
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
    for group in list_settings.GROUPS:
        pairs = _settings_form(doors, group)
        path = f"/lists/{d.list_id('own_list')}/settings/{group}"
        for fld in list_settings.fields(group):
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
