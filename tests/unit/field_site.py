"""The site of the field-level access matrix (tests/unit/test_field_matrix.py and
tests/unit/test_field_matrix_web.py): the doors of the route matrix (tests/unit/doors.py),
with the fields each REST write passes to ``Params.only`` recorded from the running app,
and who each rule allows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mtaplugin import passwords
from mtaplugin.api import dialect
from tests.unit import doors as d
from tests.unit.test_access_matrix import administers, fill, moderates, owns_domain, routes
from tests.unit.webclient import CHEAP_PASSWORDS

LOGGED_IN = [r for r in d.ROLES if r != "anonymous"]
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
