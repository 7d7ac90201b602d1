"""The REST dialect as Postorius 1.3.13 speaks it (tests/integration/test_postorius.py drives
the real Postorius; these are the answers it depends on, in-process)."""

from __future__ import annotations

import sys

from tests.unit.test_api import Api, api, host, new_list  # noqa: F401  (fixtures)


def test_a_page_as_large_as_sys_maxsize_is_every_entry(api: Api, host: str) -> None:  # noqa: F811
    list_id = new_list(api, host)
    assert api.post("members", f"list_id={list_id}&subscriber=o@example.net&role=owner").status_code == 201
    found = api.post(
        "lists/find", f"count={sys.maxsize}&page=1&role=owner&subscriber=o@example.net"
    )
    assert found.status_code == 200, found.text
    assert [e["list_id"] for e in found.json["entries"]] == [list_id]
    beyond = api.get(f"lists?count={sys.maxsize}&page=2")
    assert beyond.status_code == 200 and "entries" not in beyond.json
    too_large = api.get(f"lists?count={sys.maxsize + 1}")
    assert too_large.status_code == 400 and "count" in too_large.json["description"]
