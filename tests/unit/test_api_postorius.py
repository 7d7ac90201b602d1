"""The REST dialect as Postorius 1.3.13 speaks it (tests/integration/test_postorius.py drives
the real Postorius; these are the answers it depends on, in-process)."""

from __future__ import annotations

import sys

from tests.unit.test_api import Api, api, host, new_list  # noqa: F401  (fixtures)


def test_a_page_as_large_as_sys_maxsize_is_every_entry(api: Api, host: str) -> None:  # noqa: F811
    list_id = new_list(api, host)
    assert (
        api.post("members", f"list_id={list_id}&subscriber=o@example.net&role=owner").status_code
        == 201
    )
    found = api.post(
        "lists/find", f"count={sys.maxsize}&page=1&role=owner&subscriber=o@example.net"
    )
    assert found.status_code == 200, found.text
    assert [e["list_id"] for e in found.json["entries"]] == [list_id]
    beyond = api.get(f"lists?count={sys.maxsize}&page=2")
    assert beyond.status_code == 200 and "entries" not in beyond.json
    too_large = api.get(f"lists?count={sys.maxsize + 1}")
    assert too_large.status_code == 400 and "count" in too_large.json["description"]


def test_a_domain_sends_the_keys_it_has_no_value_for_as_null(api: Api, host: str) -> None:  # noqa: F811
    entry = api.get(f"domains/{host}").json
    assert entry["alias_domain"] is None and entry["base_url"] is None
    assert entry["description"] is None
    listed = api.get("domains").json["entries"]
    assert {"alias_domain", "base_url", "description"} <= set(listed[0])


def test_a_second_unsubscription_while_one_waits_answers_202(api: Api, host: str) -> None:  # noqa: F811
    list_id = new_list(api, host, unsubscription_policy="moderate")
    subscribed = api.post(
        "members",
        f"list_id={list_id}&subscriber=leaver@example.net&pre_verified=true"
        "&pre_confirmed=true&pre_approved=true",
    )
    assert subscribed.status_code == 201, subscribed.text
    member_path = subscribed.headers["location"].split("/3.1/", 1)[1]
    first = api.delete(member_path)
    assert first.status_code == 202 and first.json["token_owner"] == "moderator"
    second = api.delete(member_path)
    assert second.status_code == 202, second.text
    assert second.json == {"token": first.json["token"], "token_owner": "moderator"}
    assert api.get(f"lists/{list_id}/requests?request_type=unsubscription").json["total_size"] == 1


def test_a_subscriber_is_a_user(api: Api, host: str) -> None:  # noqa: F811
    list_id = new_list(api, host)
    api.post(
        "members",
        f"list_id={list_id}&subscriber=joiner@example.net&pre_verified=true"
        "&pre_confirmed=true&pre_approved=true",
    )
    user = api.get("users/joiner@example.net")
    assert user.status_code == 200, user.text
    addresses = api.get(f"users/{user.json['user_id']}/addresses").json["entries"]
    assert [a["email"] for a in addresses] == ["joiner@example.net"]
