"""mtaplugin.config: a settings file that includes others (``include = [...]``), as the
Debian package's mtaplugin.toml includes its generated secrets.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtaplugin import config
from tests.unit.test_config import load_refused, write


# --- include ------------------------------------------------------------------------------
def test_included_file_is_read_and_the_including_file_wins(tmp_path: Path):
    write(tmp_path / "secrets.toml", '[api]\nadmin_password = "s3cret"\nadmin_user = "inc"\n')
    cfg = write(
        tmp_path / "mtaplugin.toml",
        'include = ["secrets.toml"]\n[api]\nadmin_user = "own"\n',
    )
    s = config.load(cfg, environ={})
    assert s.api.admin_password == "s3cret"
    assert s.api.admin_user == "own"


def test_include_may_be_one_name_and_the_environment_still_wins(tmp_path: Path):
    write(tmp_path / "secrets.toml", '[site]\nsecret_key = "' + "k" * 40 + '"\n')
    cfg = write(tmp_path / "mtaplugin.toml", 'include = "secrets.toml"\n')
    assert config.load(cfg, environ={}).site.secret_key == "k" * 40
    env = {"MTAPLUGIN_SITE_SECRET_KEY": "e" * 40}
    assert config.load(cfg, environ=env).site.secret_key == "e" * 40


def test_missing_included_file_is_refused_naming_include(tmp_path: Path):
    cfg = write(tmp_path / "mtaplugin.toml", 'include = ["secrets.toml"]\n')
    err = load_refused(cfg)
    assert err.key == "include"
    assert "secrets.toml" in str(err)


@pytest.mark.parametrize("value", ["3", "[1]", '[""]'])
def test_include_must_name_files(tmp_path: Path, value: str):
    cfg = write(tmp_path / "mtaplugin.toml", f"include = {value}\n")
    assert load_refused(cfg).key == "include"


def test_included_file_cannot_include(tmp_path: Path):
    write(tmp_path / "b.toml", 'include = "a.toml"\n')
    cfg = write(tmp_path / "a.toml", 'include = "b.toml"\n')
    assert load_refused(cfg).key == "include"


def test_bad_key_in_included_file_is_named(tmp_path: Path):
    write(tmp_path / "secrets.toml", "[api]\nnope = 1\n")
    cfg = write(tmp_path / "mtaplugin.toml", 'include = "secrets.toml"\n')
    assert load_refused(cfg).key == "api.nope"
