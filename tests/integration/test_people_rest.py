"""``/3.1/people/...`` under the real gunicorn server: lists and members made with the real
mailmanclient, then an address found and removed on every list, exported and forgotten
with plain HTTP (mailmanclient has no call for mtaplugin's own resources)."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.error import HTTPError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import pytest
from mailmanclient import Client

from tests.helpers import unique
from tests.integration.test_api_server import api  # noqa: F401  (the gunicorn fixture)

AUTH = "Basic " + base64.b64encode(b"admin:s3cret").decode()


def _call(url: str, data: dict[str, str] | None = None) -> tuple[int, Any]:
    body = urlencode(data).encode() if data is not None else None
    req = Request(url, data=body, method="POST" if data is not None else "GET")
    req.add_header("Authorization", AUTH)
    if body is not None:
        req.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def test_find_remove_export_forget_over_the_real_api(api: str) -> None:  # noqa: F811
    client = Client(f"{api}/3.1", "admin", "s3cret")
    host = f"{unique('rest')}.test"
    domain = client.create_domain(host)
    target = f"{unique('zed')}@example.net"
    names = []
    for _ in range(3):
        mlist = domain.create_list(unique("l"))
        mlist.subscribe(target, pre_verified=True, pre_confirmed=True, pre_approved=True)
        names.append(mlist.fqdn_listname)
    status, found = _call(f"{api}/3.1/people/{target}/lists")
    assert status == 200
    assert sorted(e["fqdn_listname"] for e in found["entries"]) == sorted(names)
    status, doc = _call(f"{api}/3.1/people/{target}")
    assert status == 200 and len(doc["memberships"]) == 3
    status, done = _call(f"{api}/3.1/people/{target}/lists", {"action": "remove"})
    assert status == 200, done
    assert sorted(e["list"] for e in done["entries"] if e["changed"]) == sorted(names)
    for name in names:
        assert [m.email for m in client.get_list(name).members] == []
    status, plan = _call(f"{api}/3.1/people/{target}/forget")
    assert status == 200 and plan["would_remove"]["addresses"] == 1
    status, gone = _call(f"{api}/3.1/people/{target}/forget", {"archive": "remove"})
    assert status == 200, gone
    status, err = _call(f"{api}/3.1/people/{target}")
    assert status == 404 and "holds nothing" in err["description"]


@pytest.mark.parametrize("path", ["people/{e}", "people/{e}/forget"])
def test_an_unknown_person_is_404(api: str, path: str) -> None:  # noqa: F811
    status, err = _call(f"{api}/3.1/" + path.format(e=f"{unique('nobody')}@example.net"))
    assert status == 404 and err["title"] == "404 Not Found"
