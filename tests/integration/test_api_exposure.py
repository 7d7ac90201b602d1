"""Secure by default, under the real gunicorn: the REST admin with its default password is
never published off loopback, and with ``[web] listen`` the web UI has a listener of its
own that does not serve ``/3.1/`` (the one a TLS proxy fronts), while the REST listener
does not serve the web UI."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from mtaplugin.testing import free_port, wait_for_port
from tests.conftest import fresh_database


def _env(request: pytest.FixtureRequest, lab_root: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTAPLUGIN_")}
    env.update(
        MTAPLUGIN_DATABASE_URL=fresh_database(request, "sqlite", lab_root),
        MTAPLUGIN_API_WORKERS="1",
        **{f"MTAPLUGIN_{k.upper()}": v for k, v in settings.items()},
    )
    return env


def _status(url: str, auth: str | None = None) -> int:
    req = Request(url)
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except HTTPError as err:
        return err.code


def _refused_to_start(
    request: pytest.FixtureRequest, lab_root: Path, command: str, **listeners: str
) -> str:
    """``mtaplugin COMMAND`` with these listeners refuses to start: what it says."""
    run = subprocess.run(
        [sys.executable, "-m", "mtaplugin.cli", command],
        env=_env(request, lab_root, **listeners),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1
    return run.stderr


@pytest.mark.parametrize("command", ["api", "serve"])
def test_the_default_password_is_refused_off_loopback(
    request: pytest.FixtureRequest, lab_root: Path, command: str
) -> None:
    said = _refused_to_start(request, lab_root, command, api_listen=f"0.0.0.0:{free_port()}")
    assert "api.admin_password" in said and "restpass" in said
    assert "api.listen" in said  # and says what to do instead


@pytest.fixture
def split_listeners(request: pytest.FixtureRequest, lab_root: Path) -> Iterator[tuple[str, str]]:
    """``mtaplugin api`` with the REST API on loopback (default password, allowed there)
    and the web UI on a listener of its own, on every address."""
    api_port, web_port = free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtaplugin.cli", "api"],
        env=_env(
            request,
            lab_root,
            api_listen=f"127.0.0.1:{api_port}",
            web_listen=f"0.0.0.0:{web_port}",
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(api_port)
        wait_for_port(web_port)
        yield f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{web_port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def test_the_web_listener_does_not_serve_rest(split_listeners: tuple[str, str]) -> None:
    api, web = split_listeners
    for path in ("/3.1/system/versions", "/3.0/system/versions", "/3.1", "/3.1/lists"):
        assert _status(web + path, "restadmin:restpass") == 404, path
    assert _status(web + "/login") == 200
    # a Host header naming the REST listener changes nothing: the socket decides
    req = Request(web + "/3.1/system/versions", headers={"Host": api.removeprefix("http://")})
    req.add_header("Authorization", "Basic " + base64.b64encode(b"restadmin:restpass").decode())
    with pytest.raises(HTTPError) as err:
        urlopen(req, timeout=10)
    assert err.value.code == 404


def test_the_rest_listener_does_not_serve_the_web_ui(split_listeners: tuple[str, str]) -> None:
    api, _web = split_listeners
    assert _status(api + "/3.1/system/versions", "restadmin:restpass") == 200
    assert _status(api + "/3.1/system/versions") == 401
    for path in ("/login", "/", "/domains"):
        assert _status(api + path) == 404, path


def test_a_web_listener_on_the_rest_port_is_refused(
    request: pytest.FixtureRequest, lab_root: Path
) -> None:
    port = free_port()
    listen = {"api_listen": f"127.0.0.1:{port}", "web_listen": f"0.0.0.0:{port}"}
    assert "web.listen" in _refused_to_start(request, lab_root, "api", **listen)
