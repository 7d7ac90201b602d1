"""``mtaplugin users add|passwd|list``, the web's signing key, and the WSGI mount."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from falcon import testing

from mtaplugin import config
from mtaplugin.cli import main
from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.manage import users
from mtaplugin.web import keys
from mtaplugin.web.mount import mount

pytestmark = pytest.mark.usefixtures("cheap_argon2")


def _run(monkeypatch, capsys, stdin: str, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_users_add_passwd_list(db_url, monkeypatch, capsys):
    monkeypatch.delenv("MTAPLUGIN_CONFIG", raising=False)
    monkeypatch.setenv("MTAPLUGIN_DATABASE_URL", db_url)
    code, out, _err = _run(
        monkeypatch, capsys, "first password\n", "users", "add", "Ann@Example.org", "--site-admin"
    )
    assert code == 0 and "ann@example.org" in out.lower()
    code, _out, err = _run(monkeypatch, capsys, "short\n", "users", "passwd", "ann@example.org")
    assert code == 1 and "password" in err
    code, _out, err = _run(monkeypatch, capsys, "pw second!\n", "users", "add", "ann@example.org")
    assert code == 1 and "already has a user" in err
    code, _out, _err = _run(
        monkeypatch, capsys, "the second password\n", "users", "passwd", "ann@example.org"
    )
    assert code == 0
    code, out, _err = _run(monkeypatch, capsys, "", "users", "list")
    assert "ann@example.org  (site admin)" in out
    with sessionmaker_for(make_engine(db_url))() as s:
        assert users.authenticate(s, "ip", "ann@example.org", "the second password")
        assert users.authenticate(s, "ip", "ann@example.org", "first password") is None


def test_a_missing_secret_is_generated_once_per_var_dir(tmp_path: Path):
    settings = config.load(environ={"MTAPLUGIN_SITE_VAR_DIR": str(tmp_path)})
    first = keys.site_secret(settings)
    assert len(first) >= 32
    assert (tmp_path / keys.SECRET_FILE).stat().st_mode & 0o777 == 0o600
    assert keys.site_secret(settings) == first
    given = config.load(
        environ={"MTAPLUGIN_SITE_SECRET_KEY": "k" * 40, "MTAPLUGIN_SITE_VAR_DIR": str(tmp_path)}
    )
    assert keys.site_secret(given) == b"k" * 40
    assert keys.derive(first, "session") != keys.derive(first, "other")


def test_mount_sends_the_api_paths_to_the_api_and_the_rest_to_the_web():
    def app(name: str):
        def _wsgi(environ, start_response):
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [name.encode()]

        return _wsgi

    both = mount(app("api"), app("web"))
    assert testing.simulate_get(both, "/3.1/lists").text == "api"
    assert testing.simulate_get(both, "/3.0/system").text == "api"
    assert testing.simulate_get(both, "/").text == "web"
    assert testing.simulate_get(both, "/lists/x.example.org/").text == "web"
    assert testing.simulate_get(both, "/3.10/").text == "web"
