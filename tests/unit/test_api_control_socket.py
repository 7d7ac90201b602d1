"""The gunicorn control socket (gunicorn >= 25.1) is per instance: beside the instance's
state and named for its port, never the per-user default that two instances would share."""

from __future__ import annotations

from pathlib import Path

import pytest
from gunicorn.config import Config

from mtaplugin import config
from mtaplugin.api.server import _Gunicorn, control_socket


def settings(var_dir: str, listen: str = "127.0.0.1:8123") -> config.Settings:
    return config.load(
        None, environ={"MTAPLUGIN_SITE_VAR_DIR": var_dir, "MTAPLUGIN_API_LISTEN": listen}
    )


def test_two_instances_get_two_control_sockets(tmp_path: Path):
    one = control_socket(settings(str(tmp_path / "a")))
    other = control_socket(settings(str(tmp_path / "b"), "127.0.0.1:8124"))
    same_dir = control_socket(settings(str(tmp_path / "a"), "127.0.0.1:8124"))
    assert one == str(tmp_path / "a" / "api-8123.ctl")
    assert len({one, other, same_dir}) == 3


def test_a_path_too_long_for_a_unix_socket_turns_it_off(tmp_path: Path):
    assert control_socket(settings(str(tmp_path / ("x" * 120)))) is None


@pytest.mark.skipif(
    "control_socket" not in Config().settings, reason="gunicorn < 25.1 has no control socket"
)
def test_gunicorn_is_given_the_instances_socket(tmp_path: Path):
    app = _Gunicorn(settings(str(tmp_path)))
    assert app.cfg.control_socket == str(tmp_path / "api-8123.ctl")
    assert app.cfg.control_socket_mode == 0o600
    assert not app.cfg.control_socket_disable
    off = _Gunicorn(settings(str(tmp_path / ("x" * 120))))
    assert off.cfg.control_socket_disable
