"""The check before gunicorn starts: the REST admin's default password only on loopback."""

from __future__ import annotations

import pytest

from mtaplugin import config
from mtaplugin.api import exposure
from mtaplugin.errors import ConfigError


@pytest.mark.parametrize(
    ("listen", "loopback"),
    [
        ("127.0.0.1:8001", True),
        ("127.0.0.2:8001", True),
        ("localhost:8001", True),
        ("[::1]:8001", True),
        ("0.0.0.0:8001", False),
        ("[::]:8001", False),
        ("192.0.2.1:8001", False),
        ("lists.example.org:8001", False),
    ],
)
def test_is_loopback(listen: str, loopback: bool) -> None:
    assert config.is_loopback(listen) is loopback


def _settings(**env: str) -> config.Settings:
    return config.load(None, environ={f"MTAPLUGIN_{k.upper()}": v for k, v in env.items()})


def test_the_default_password_is_fine_on_loopback() -> None:
    exposure.check(_settings())
    exposure.check(_settings(web_listen="0.0.0.0:8443"))  # the web UI alone goes public


@pytest.mark.parametrize("listen", ["0.0.0.0:8001", "192.0.2.1:8001", "[::]:8001"])
def test_the_default_password_off_loopback_is_refused(listen: str) -> None:
    with pytest.raises(ConfigError) as bad:
        exposure.check(_settings(api_listen=listen))
    assert bad.value.key == "api.admin_password"
    exposure.check(_settings(api_listen=listen, api_admin_password="a-password-of-our-own"))


def test_the_web_listener_needs_a_port_of_its_own() -> None:
    with pytest.raises(ConfigError) as bad:
        exposure.check(_settings(web_listen="0.0.0.0:8001"))
    assert bad.value.key == "web.listen"


def test_a_bad_web_listen_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError) as bad:
        _settings(web_listen="8443")
    assert bad.value.key == "web.listen"
