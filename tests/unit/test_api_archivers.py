"""``/lists/{list}/archivers`` in Mailman's shape (site and list), and ``/queues/archive``
and ``/queues/nntp`` (the rows waiting), on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, select

from mtaplugin.config import ArchiversSettings
from mtaplugin.model import ArchiverHandOff, MailingList, NewsArticle
from tests.unit.test_api import Api, api_for, new_domain, new_list

SITE = ArchiversSettings(
    hyperkitty=True, hyperkitty_base_url="http://127.0.0.1:9/hyperkitty/", mhonarc=False
)


@pytest.fixture
def api(module_db_url: str, module_engine: Engine) -> Api:
    return api_for(module_db_url, module_engine, archivers=SITE)


@pytest.fixture
def host(api: Api) -> str:
    return new_domain(api, "arch")


def test_get_shows_the_archivers_the_site_enables(api: Api, host: str) -> None:
    """As Mailman 3.3.10: only the site's archivers, no self_link."""
    list_id = new_list(api, host)
    body = api.get(f"lists/{list_id}/archivers").json
    assert set(body) == {"hyperkitty", "mtaplugin", "http_etag"}
    assert body["hyperkitty"] is True and body["mtaplugin"] is True


def test_patch_turns_one_off_and_on_again(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    assert api.patch(f"lists/{list_id}/archivers", "hyperkitty=false").status_code == 204
    assert api.get(f"lists/{list_id}/archivers").json["hyperkitty"] is False
    assert api.patch(f"lists/{list_id}/archivers", "hyperkitty=yes").status_code == 204
    assert api.get(f"lists/{list_id}/archivers").json["hyperkitty"] is True


def test_bad_input_is_refused_and_nothing_changes(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    r = api.patch(f"lists/{list_id}/archivers", "hyperkitty=false&pipermail=true")
    assert r.status_code == 400 and "Unexpected parameters: pipermail" in r.json["description"]
    # an archiver the site does not enable is unexpected too (Mailman 3.3.10)
    r = api.patch(f"lists/{list_id}/archivers", "mhonarc=true")
    assert r.status_code == 400 and "mhonarc" in r.json["description"]
    r = api.patch(f"lists/{list_id}/archivers", "hyperkitty=perhaps")
    assert r.status_code == 400 and "hyperkitty" in r.json["description"]
    r = api.call("PUT", f"lists/{list_id}/archivers", "hyperkitty=false")
    assert r.status_code == 400 and "mtaplugin" in r.json["description"]
    assert api.get(f"lists/{list_id}/archivers").json["hyperkitty"] is True
    every = "hyperkitty=false&mtaplugin=true"
    assert api.call("PUT", f"lists/{list_id}/archivers", every).status_code == 204
    assert api.get(f"lists/{list_id}/archivers").json["hyperkitty"] is False


def _hand_off(pk: int, failed: bool) -> Any:
    return ArchiverHandOff(mailing_list_id=pk, archiver="hyperkitty", message=b"x", failed=failed)


def _article(pk: int, failed: bool) -> Any:
    return NewsArticle(mailing_list_id=pk, newsgroup="local.test", article=b"x", failed=failed)


@pytest.mark.parametrize(
    ("name", "row", "directory"),
    [("archive", _hand_off, "archiver_queue"), ("nntp", _article, "news_queue")],
    ids=["archive", "nntp"],
)
def test_a_queue_counts_the_rows_waiting(
    api: Api,
    host: str,
    module_sessions: Any,
    name: str,
    row: Callable[[int, bool], Any],
    directory: str,
) -> None:
    list_id = new_list(api, host)
    before = api.get(f"queues/{name}").json["count"]
    with module_sessions.begin() as s:
        pk = s.scalar(select(MailingList.id).where(MailingList.list_id == list_id))
        for failed in (False, False, True):
            s.add(row(pk, failed))
    queue = api.get(f"queues/{name}").json
    assert queue["count"] == before + 2  # the failed one is not waiting
    assert queue["name"] == name and queue["directory"] == directory
    assert len(queue["files"]) == queue["count"]
