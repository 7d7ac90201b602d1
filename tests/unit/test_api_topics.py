"""REST: a list's topics (config) and a member's choice of them."""

from __future__ import annotations

import json

from tests.unit.test_api import Api, api, host, new_list  # noqa: F401  (fixtures)


def test_topics_are_set_read_and_checked(api: Api, host: str) -> None:  # noqa: F811
    list_id = new_list(api, host)
    r = api.client.simulate_patch(
        f"/3.1/lists/{list_id}/config",
        json={
            "topics_enabled": True,
            "topics_bodylines_limit": -1,
            "topics": [
                {"name": "release", "regex": "release|rc[0-9]", "description": "versions"},
                ["social", "dinner"],
            ],
        },
        headers=api.headers,
    )
    assert r.status_code == 204, r.text
    config = api.get(f"lists/{list_id}/config").json
    assert config["topics_enabled"] is True and config["topics_bodylines_limit"] == -1
    assert config["topics"] == [
        {"name": "release", "regex": "release|rc[0-9]", "description": "versions"},
        {"name": "social", "regex": "dinner", "description": ""},
    ]
    # form data: one line per topic, name | description | regex
    r = api.patch(f"lists/{list_id}/config", "topics=news+%7C+the+news+%7C+news%7Cpress")
    assert r.status_code == 204, r.text
    assert api.get(f"lists/{list_id}/config/topics").json["topics"] == [
        {"name": "news", "regex": "news|press", "description": "the news"}
    ]
    # bad input: the field is named, nothing changes
    for bad in (
        [{"name": "x", "regex": "("}],
        [{"name": "two words", "regex": "x"}],
        [["a", "x"], ["A", "y"]],
        "not a list",
    ):
        r = api.client.simulate_patch(
            f"/3.1/lists/{list_id}/config",
            json={"topics": bad, "display_name": "Changed"},
            headers=api.headers,
        )
        assert r.status_code == 400 and "topics" in r.json["description"], (bad, r.text)
    config = api.get(f"lists/{list_id}/config").json
    assert [t["name"] for t in config["topics"]] == ["news"]
    assert config["display_name"] != "Changed"


def test_a_member_chooses_topics(api: Api, host: str) -> None:  # noqa: F811
    list_id = new_list(api, host)
    join = f"list_id={list_id}&subscriber=dee@example.net&pre_verified=1&pre_confirmed=1"
    r = api.post("members", join)
    member = r.headers["location"].rsplit("/", 1)[1]
    r = api.patch(f"members/{member}", "topics=release")
    assert r.status_code == 400 and "has no topics" in r.json["description"]
    body = json.dumps([["release", "release"], ["social", "dinner"]])
    api.client.simulate_patch(
        f"/3.1/lists/{list_id}/config",
        json={"topics_enabled": True, "topics": json.loads(body)},
        headers=api.headers,
    )
    r = api.patch(f"members/{member}", "topics=release,nosuch")
    assert r.status_code == 400 and "nosuch" in r.json["description"]
    assert "topics" not in api.get(f"members/{member}").json
    r = api.patch(f"members/{member}", "topics=Release&receive_nonmatching_topics=true")
    assert r.status_code == 204, r.text
    entry = api.get(f"members/{member}").json
    assert entry["topics"] == ["release"] and entry["receive_nonmatching_topics"] is True
    assert api.patch(f"members/{member}", "topics=").status_code == 204
    assert "topics" not in api.get(f"members/{member}").json
