"""The access matrix at the level of fields (issue 30, deliverable 2): the REST API (the
web forms: tests/unit/test_field_matrix_web.py).

tests/unit/test_access_matrix.py tries every route with an empty body: it sees who passes
each door, not what they may write behind it.  Here every field a REST write takes
(tests/unit/field_routes.py, its kinds in tests/unit/field_rows.py) is tried:

- **who may set it**: each logged-in role sends a good value; the roles the field's rule
  allows get the route's answer, the others are refused (nothing changes);
- **which values are refused**: each refused value answers 400 naming the field, and
  nothing of the same request is kept;
- **values only the site admin may give** (an ``alias_domain``, a ``file:`` URI): refused
  to everybody else, taken from the site admin.

The fields come from the code's own tables (the REST config attributes, the template
names, the preferences, the roster-source fields) or are recorded from the running app
(what each responder passes to ``Params.only``): a field without a row, or a row without a
field, fails.  Every request runs in a SAVEPOINT that is rolled back; a row generated from
a table (the same row for every name) is tried by the roles at the edge of its rule.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlencode

from falcon import testing

from tests.unit import doors as d
from tests.unit import field_routes as rows
from tests.unit.field_rows import Field, Route, config_fields
from tests.unit.field_site import LOGGED_IN, Site, allowed, edge_roles, path_of
from tests.unit.field_site import site as site

#: refusals in Mailman 3's own words (its clients read them), which do not name the field
MAILMAN_WORDS = {
    ("POST", "/domains", "mail_host", d.HOST_A): "Duplicate email host: ",
    ("POST", "/members", "list_id", "no.such.list"): "No such list",
    ("POST", "/members", "subscriber", "not an address"): "No such user: ",
}


def body(route: Route, name: str, value: str) -> str:
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


def field_rows() -> list[tuple[str, str, str, Field]]:
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
    for name, row in config_fields().items():
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
