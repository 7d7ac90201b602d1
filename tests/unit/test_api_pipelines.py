"""``posting_pipeline`` takes only a pipeline ``/system/pipelines`` lists, as Mailman's REST
does: another name is refused with 400 naming the field, and nothing changes."""

from __future__ import annotations

import pytest

from tests.unit.test_api import Api, api, host, new_list  # noqa: F401  (fixtures)


def test_posting_pipeline_names_a_listed_pipeline(api: Api, host: str) -> None:  # noqa: F811
    list_id = new_list(api, host)
    listed = api.get("system/pipelines").json["pipelines"]
    assert listed == ["default-posting-pipeline"]
    config = f"lists/{list_id}/config"
    for name in listed:
        assert api.patch(config, f"posting_pipeline={name}").status_code == 204
        assert api.get(config).json["posting_pipeline"] == name


@pytest.mark.parametrize("name", ["my-pipeline", "", "virgin", "default-posting-pipeline-2"])
def test_another_pipeline_is_refused_by_name(api: Api, host: str, name: str) -> None:  # noqa: F811
    list_id = new_list(api, host)
    for path, body in (
        (f"lists/{list_id}/config", f"posting_pipeline={name}&display_name=Changed"),
        (f"lists/{list_id}/config/posting_pipeline", f"posting_pipeline={name}"),
    ):
        refused = api.patch(path, body)
        assert refused.status_code == 400, refused.text
        assert refused.json["description"].startswith('Invalid Parameter "posting_pipeline"')
        assert "default-posting-pipeline" in refused.json["description"]
    config = api.get(f"lists/{list_id}/config").json
    assert config["posting_pipeline"] == "default-posting-pipeline"
    assert config["display_name"] != "Changed"
