"""Template URIs cannot reach the server's own network (M4): a real HTTP server on
127.0.0.1 stands for the REST API, cloud metadata or an intranet server.  Fetches go to
public addresses or to hosts the site allows by name, checked after every redirect and
connected to as checked; credentials reach loopback only when the port is allowed too;
the errors an owner reads name no port state; REST refuses a list owner's URI to such a
host where it is set."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
from sqlalchemy import Engine

from mtaplugin.config.site import TemplatesSettings
from mtaplugin.notices import destinations
from mtaplugin.notices.destinations import is_public
from mtaplugin.notices.fetch import FetchError, Limits, fetch
from tests.helpers import unique
from tests.unit.template_server import FOOTER, PASSWORD, USER, TemplateServer, template_server
from tests.unit.test_api import Api, api_for, new_list


@pytest.fixture(scope="module")
def server() -> Iterator[TemplateServer]:
    with template_server() as s:
        yield s


def port_of(server: TemplateServer) -> str:
    return server.base.rsplit(":", 1)[1]


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "2002:7f00:1::1",
    ],
)
def test_addresses_that_are_not_public(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2001:4860:4860::8888"])
def test_public_addresses(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))


def test_loopback_is_refused_unless_allowed_and_nothing_is_sent(server: TemplateServer) -> None:
    server.put("/3.1/addresses", '{"entries": ["every address of the site"]}')
    before = len(server.requests)
    for limits in (Limits(), Limits(allow_hosts=("localhost", "example.org:80"))):
        with pytest.raises(FetchError, match="could not fetch: not a public address"):
            fetch(server.url("/3.1/addresses"), "restadmin", "restpass", limits)
    assert len(server.requests) == before  # not even a connection
    allowed = Limits(allow_hosts=("127.0.0.1",))
    assert "every address" in fetch(server.url("/3.1/addresses"), limits=allowed)


def test_credentials_reach_loopback_only_when_the_port_is_allowed(server: TemplateServer) -> None:
    server.put("/private/footer.txt", "members only")
    host_only = Limits(allow_hosts=("127.0.0.1",))
    with pytest.raises(FetchError, match="HTTP 401"):
        fetch(server.url("/private/footer.txt"), USER, PASSWORD, host_only)
    assert server.requests[-1] == ("/private/footer.txt", "")
    with_port = Limits(allow_hosts=(f"127.0.0.1:{port_of(server)}",))
    assert fetch(server.url("/private/footer.txt"), USER, PASSWORD, with_port) == "members only"
    assert server.requests[-1][1].startswith("Basic ")


def test_a_redirect_is_checked_again(server: TemplateServer) -> None:
    """An allowed (or public) server redirects to a loopback address it is not allowed
    to reach: the fetch stops there, the target gets no request."""
    server.put("/3.1/secret", "the REST API's answer")
    target = server.url("/3.1/secret")
    server.redirect("/elsewhere", target)
    only_localhost = Limits(allow_hosts=(f"localhost:{port_of(server)}",))
    before = len(server.requests)
    with pytest.raises(FetchError, match="not a public address"):
        fetch(f"http://localhost:{port_of(server)}/elsewhere", limits=only_localhost)
    assert [path for path, _auth in server.requests[before:]] == ["/elsewhere"]


def test_the_name_is_resolved_once_and_the_checked_address_connected_to(
    server: TemplateServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No DNS rebinding: a second resolution could give another address; there is none
    (``rebind.test`` resolves only through the patched resolver, once)."""
    server.put("/rebind.txt", "from the checked address")
    port = int(port_of(server))
    calls: list[str] = []

    def once(host: str, *args: object, **kw: object) -> list[tuple[object, ...]]:
        calls.append(host)
        if len(calls) > 1:
            raise socket.gaierror("resolved a second time")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(destinations.socket, "getaddrinfo", once)
    limits = Limits(allow_hosts=(f"rebind.test:{port}",))
    assert fetch(f"http://rebind.test:{port}/rebind.txt", limits=limits) == (
        "from the checked address"
    )
    assert calls == ["rebind.test"]


def test_errors_name_no_port_state(server: TemplateServer) -> None:
    """A closed port and an open one that hangs up read the same to an owner: a category,
    no "[Errno 111] Connection refused" (the log has the detail)."""
    with pytest.raises(FetchError) as closed:
        fetch("http://127.0.0.1:1/x", limits=Limits(allow_hosts=("127.0.0.1",)))
    assert str(closed.value) == "could not fetch: no connection or no valid answer"
    with pytest.raises(FetchError) as unresolved:
        fetch(f"http://{unique('nxdomain')}.invalid/x")
    assert str(unresolved.value) == "could not fetch: the host name does not resolve"
    for error in (closed.value, unresolved.value):
        assert "Errno" not in str(error) and "refused" not in str(error).lower()


# --- REST: a list owner's URI --------------------------------------------------------------
@pytest.fixture
def api(module_db_url: str, module_engine: Engine) -> Api:
    return api_for(
        module_db_url,
        module_engine,
        templates=TemplatesSettings(allow_hosts=("templates.intranet.test",)),
    )


@pytest.fixture
def owned(api: Api) -> tuple[Api, str]:
    """(the REST API as a list's owner, the list's id)."""
    host = f"{unique('ssrf')}.test"
    assert api.post("domains", f"mail_host={host}").status_code == 201
    list_id = new_list(api, host)
    email = f"{unique('owner')}@example.net"
    assert api.post("users", f"email={email}&password=pw").status_code == 201
    body = urlencode({"list_id": list_id, "subscriber": email, "role": "owner"})
    assert api.post("members", body + "&pre_verified=1&pre_confirmed=1").status_code == 201
    return api.as_user(email, "pw"), list_id


def test_an_owner_cannot_point_a_footer_at_the_rest_api(owned: tuple[Api, str]) -> None:
    """The attack of M4 through REST: refused where it is set, the field named."""
    owner, list_id = owned
    for uri in (
        "http://127.0.0.1:8001/3.1/addresses",
        "http://localhost:8001/3.1/addresses",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:8001/3.1/addresses",
        "http://10.0.0.7/footer.txt",
    ):
        body = urlencode({"uri": uri, "username": "restadmin", "password": "restpass"})
        r = owner.patch(f"lists/{list_id}/uris/{FOOTER}", body)
        assert r.status_code == 400, (uri, r.text)
        assert "uri" in r.json["description"] and "not a public address" in r.text
    r = owner.patch(f"lists/{list_id}/uris", urlencode({FOOTER: "http://$domain/f.txt"}))
    assert r.status_code == 400 and "without variables" in r.text
    assert owner.get(f"lists/{list_id}/uris").json["total_size"] == 0


def test_an_owner_may_name_a_public_or_an_allowed_host(owned: tuple[Api, str]) -> None:
    owner, list_id = owned
    for uri in ("http://93.184.216.34/footer.txt", "https://[2001:4860:4860::8888]/f.txt"):
        r = owner.patch(f"lists/{list_id}/uris/{FOOTER}", urlencode({"uri": uri}))
        assert r.status_code == 204, r.text
    # allowed by name: no resolution needed (.test names resolve nowhere)
    allowed = "https://templates.intranet.test/$list_id/footer.txt"
    r = owner.patch(f"lists/{list_id}/uris/{FOOTER}", urlencode({"uri": allowed}))
    assert r.status_code == 204, r.text
