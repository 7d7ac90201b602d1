"""contrib/systemd and the Debian package's units (packaging/deb): the units start
commands that exist, with /etc/mtaplugin/mtaplugin.toml, and keep the state where the
service's user can write it."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from mtaplugin.cli import build_parser
from mtaplugin.supervisor import OPTIONAL_PARTS, PARTS

TOP = Path(__file__).resolve().parents[2]
UNITS = TOP / "contrib" / "systemd"
PACKAGE = TOP / "packaging" / "deb"


def unit(name: str, where: Path = UNITS) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    assert parser.read(where / name)
    return parser


def environment(service: configparser.SectionProxy) -> dict[str, str]:
    return dict(item.split("=", 1) for item in service["Environment"].split())


def commands() -> set[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return set(sub.choices)  # type: ignore[arg-type]


def test_serve_unit_runs_the_supervisor() -> None:
    service = unit("mtaplugin.service")["Service"]
    assert service["ExecStart"].split()[-1] == "serve"
    assert environment(service)["MTAPLUGIN_CONFIG"] == "/etc/mtaplugin/mtaplugin.toml"
    assert service["RuntimeDirectory"] == "mtaplugin"  # /run/mtaplugin/*.sock


@pytest.mark.parametrize("name", ["mtaplugin.service", "mtaplugin@.service"])
def test_contrib_units_keep_the_state_in_the_state_directory(name: str) -> None:
    # var_dir relative to /etc/mtaplugin/ would be /etc/mtaplugin/var: not writable
    service = unit(name)["Service"]
    assert service["StateDirectory"] == "mtaplugin"
    assert environment(service)["MTAPLUGIN_SITE_VAR_DIR"] == "/var/lib/mtaplugin"


@pytest.mark.parametrize("name", ["mtaplugin.service", "mtaplugin@.service"])
def test_package_units_run_the_packaged_command_on_the_packaged_settings(name: str) -> None:
    service = unit(name, PACKAGE)["Service"]
    argv = service["ExecStart"].split()
    assert argv[0] == "/usr/lib/mtaplugin/venv/bin/mtaplugin"
    assert argv[1] in {"serve", "%i"}
    assert environment(service)["MTAPLUGIN_CONFIG"] == "/etc/mtaplugin/mtaplugin.toml"
    assert service["User"] == "mtaplugin"
    assert service["StateDirectory"] == "mtaplugin"
    assert service["ExecStartPre"] == "+/usr/lib/mtaplugin/prepare"


@pytest.mark.parametrize("part", [*PARTS, *OPTIONAL_PARTS])
def test_every_part_is_a_command_the_template_can_start(part: str) -> None:
    service = unit("mtaplugin@.service")["Service"]
    assert service["ExecStart"].endswith(" %i")
    assert part in commands()
    assert service["RuntimeDirectoryPreserve"] == "yes"


def test_serve_runs_the_lmtp_and_exim_parts_only_when_enabled() -> None:
    from mtaplugin import config
    from mtaplugin.supervisor import parts

    assert parts(config.load(environ={})) == PARTS
    on = config.load(environ={"MTAPLUGIN_LMTP_ENABLED": "true", "MTAPLUGIN_EXIM_ENABLED": "1"})
    assert parts(on) == (*PARTS, "lmtp", "exim")


@pytest.mark.parametrize(
    ("key", "value"),
    [("MTAPLUGIN_LMTP_SOCKET", "lmtp.sock"), ("MTAPLUGIN_EXIM_SOCKET", "inet:25@127.0.0.1")],
)
def test_bad_front_end_sockets_are_refused_naming_the_key(key: str, value: str) -> None:
    from mtaplugin import config
    from mtaplugin.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        config.load(environ={key: value})
    assert key[len("MTAPLUGIN_") :].lower().replace("_", ".", 1) in str(err.value)
