"""REST's parameter getters are typed (mypy checks what the callers do with untrusted input)
and read values as Mailman's clients send them, refusing a wrong one by its name."""

from __future__ import annotations

import inspect
import json
from enum import StrEnum
from typing import get_overloads

import falcon
import pytest
from falcon.testing import create_req

from mtaplugin.api.dialect import Params
from tests.unit.test_api import Api, api  # noqa: F401  (a pytest fixture)


class Colour(StrEnum):
    red = "red"
    blue = "blue"


def _params(body: dict[str, object] | None = None, query: str = "") -> Params:
    if body is None:
        return Params.of(create_req(query_string=query))
    return Params.of(
        create_req(
            method="POST",
            query_string=query,
            body=json.dumps(body),
            headers={"Content-Type": "application/json"},
        )
    )


@pytest.mark.parametrize("getter", ["str", "bool", "int", "enum"])
def test_every_getter_has_typed_variants_and_none_returns_any(getter: str) -> None:
    variants = get_overloads(getattr(Params, getter))
    assert len(variants) >= 2
    for variant in (*variants, getattr(Params, getter)):
        returned = inspect.signature(variant).return_annotation
        assert returned is not inspect.Signature.empty and "Any" not in str(returned)
    raw = inspect.signature(Params.raw).return_annotation
    assert "Any" not in str(raw)


def test_the_getters_read_what_clients_send() -> None:
    p = _params(query="name=Team&n=7&flag=True&colour=BLUE&empty=&none=None&many=a&many=b")
    assert p.str("name") == "Team" and p.str("absent") is None
    assert p.str("absent", "x") == "x" and p.str("empty") == ""
    assert p.text("none") is None and p.text("name") == "Team"
    assert p.int("n") == 7 and p.int("absent") is None and p.int("absent", 3) == 3
    assert p.bool("flag") is True and p.bool("absent") is None and p.bool("absent", False) is False
    assert p.enum("colour", Colour) is Colour.blue and p.enum("absent", Colour) is None
    assert p.enum("absent", Colour, Colour.red) is Colour.red
    assert p.list("many") == ["a", "b"]
    j = _params({"n": 7.0, "flag": False, "name": 12})
    assert j.int("n") == 7 and j.bool("flag") is False and j.str("name") == "12"


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda p: p.str("absent", required=True), "Missing Parameter: absent"),
        (lambda p: p.str("obj"), 'Invalid Parameter "obj": expected a text value'),
        (lambda p: p.int("word"), 'Invalid Parameter "word": expected a whole number'),
        (lambda p: p.int("n", minimum=10), 'Invalid Parameter "n": must be at least 10'),
        (lambda p: p.bool("word"), 'Invalid Parameter "word": expected a boolean'),
        (lambda p: p.enum("word", Colour), 'Invalid Parameter "word": unknown value'),
        (lambda p: p.str("twice"), 'Invalid Parameter "twice": give it once'),
    ],
)
def test_a_wrong_value_is_refused_by_name(call, says: str) -> None:  # type: ignore[no-untyped-def]
    p = _params({"obj": {"a": 1}, "word": "maybe", "n": 7, "twice": ["a", "b"]})
    with pytest.raises(falcon.HTTPBadRequest) as refused:
        call(p)
    assert refused.value.description.startswith(says)


def test_a_null_is_server_owner_is_refused_by_name(api: Api) -> None:  # noqa: F811
    assert api.post("users", "email=own@example.org").status_code == 201
    r = api.client.simulate_patch(
        "/3.1/users/own@example.org",
        json={"is_server_owner": None},
        headers=api.headers,
    )
    assert r.status_code == 400
    assert r.json["description"].startswith('Invalid Parameter "is_server_owner"')
    assert api.get("users/own@example.org").json["is_server_owner"] is False
