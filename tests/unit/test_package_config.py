"""The Debian package's default settings (packaging/deb/mtaplugin.toml): they load, keep
the state in /var/lib/mtaplugin, put the Postfix-facing sockets under Postfix's queue
directory (0660), and take the secrets from the secrets.toml postinst writes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from mtaplugin import config
from mtaplugin.config import UnixSocket
from mtaplugin.errors import ConfigError

PACKAGE = Path(__file__).resolve().parents[2] / "packaging" / "deb"


def installed(tmp_path: Path, secrets: str | None) -> Path:
    etc = tmp_path / "etc" / "mtaplugin"
    etc.mkdir(parents=True)
    shutil.copy(PACKAGE / "mtaplugin.toml", etc / "mtaplugin.toml")
    if secrets is not None:
        (etc / "secrets.toml").write_text(secrets, encoding="utf-8")
    return etc / "mtaplugin.toml"


def test_package_settings(tmp_path: Path) -> None:
    key = "k" * 43
    path = installed(tmp_path, f'[api]\nadmin_password = "pw"\n[site]\nsecret_key = "{key}"\n')
    s = config.load(path, environ={})
    assert s.database.url == "sqlite:////var/lib/mtaplugin/mtaplugin.db"
    assert s.site.var_dir == "/var/lib/mtaplugin"
    assert s.milter.socket == UnixSocket("/var/spool/postfix/mtaplugin/milter.sock", 0o660)
    assert s.lookup.socket == UnixSocket("/var/spool/postfix/mtaplugin/lookup.sock", 0o660)
    assert s.api.admin_password == "pw"
    assert s.site.secret_key == key
    assert config.api_is_loopback(s)


def test_package_settings_hold_no_secret() -> None:
    text = (PACKAGE / "mtaplugin.toml").read_text(encoding="utf-8")
    body = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in body if "admin_password" in line or "secret_key" in line]


def test_a_database_password_goes_into_the_secrets_as_the_settings_say(tmp_path: Path) -> None:
    # the comment above [database] url: the URL with its password in secrets.toml (0640
    # root:mtaplugin, never shown around), and the line in mtaplugin.toml taken out
    url = "postgresql+psycopg://lists:s3cret@db.example/lists"
    path = installed(tmp_path, f'[database]\nurl = "{url}"\n')
    assert config.load(path, environ={}).database.url != url  # the line wins while it is there
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"(?m)^url = .*$", "", text), encoding="utf-8")
    assert config.load(path, environ={}).database.url == url


def test_without_the_generated_secrets_the_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        config.load(installed(tmp_path, None), environ={})
    assert info.value.key == "include"


@pytest.mark.parametrize("script", ["postinst", "prerm", "postrm", "prepare", "mtaplugin.sh"])
def test_maintainer_scripts_are_executable_posix_shell(script: str) -> None:
    path = PACKAGE / script
    assert path.read_text(encoding="utf-8").startswith("#!/bin/sh\n")
    assert path.stat().st_mode & 0o111


# --- the package's settings and the Postfix lines it ships (contrib/postfix/main.cf) -------
CONTRIB_MAIN_CF = PACKAGE.parents[1] / "contrib" / "postfix" / "main.cf"
QUEUE_DIR = "/var/spool/postfix"


def main_cf_values() -> str:
    lines = CONTRIB_MAIN_CF.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("#"))


def test_the_sockets_the_postfix_lines_name_are_where_the_package_puts_them(
    tmp_path: Path,
) -> None:
    s = config.load(installed(tmp_path, ""), environ={})
    # unix:mtaplugin/NAME.sock, relative to Postfix's queue directory
    for name in re.findall(r"unix:mtaplugin/(\w+)\.sock", main_cf_values()):
        section = getattr(s, name)
        expected = f"{QUEUE_DIR}/mtaplugin/{name}.sock"
        assert section.socket.path == expected, f"packaging/deb/mtaplugin.toml: [{name}] socket"
        assert section.socket.mode == 0o660


def test_the_tables_the_postfix_lines_name_are_the_ones_the_package_writes(
    tmp_path: Path,
) -> None:
    s = config.load(installed(tmp_path, ""), environ={})
    tables = set(re.findall(r"hash:(/var/lib/mtaplugin/\S+?)(?=[\s,}]|$)", main_cf_values()))
    for table in tables:
        # lookup.tables_dir (issue 22 item 1): set it in packaging/deb/mtaplugin.toml
        assert getattr(s.lookup, "tables_dir", None) == str(Path(table).parent), (
            f'packaging/deb/mtaplugin.toml: [lookup] tables_dir = "{Path(table).parent}"'
        )
    if any(t.endswith("/transport") for t in tables):
        # list mail no milter decided goes to the LMTP front end (lookup.transport)
        assert s.lmtp.enabled, "packaging/deb/mtaplugin.toml: [lmtp] enabled = true"
        assert s.lmtp.socket.path == f"{QUEUE_DIR}/mtaplugin/lmtp.sock"
