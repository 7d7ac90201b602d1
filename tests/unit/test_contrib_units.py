"""contrib/systemd and the Debian package's units (packaging/deb): the units start
commands that exist, with /etc/mtaplugin/mtaplugin.toml, and keep the state where the
service's user can write it; all four are hardened alike, and the service may still write
wherever its settings put a socket, the database or the Postfix tables."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mtaplugin import config
from mtaplugin.cli import build_parser
from mtaplugin.config import UnixSocket, sqlite_path
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
    from mtaplugin.supervisor import parts

    assert parts(config.load(environ={})) == PARTS
    on = config.load(environ={"MTAPLUGIN_LMTP_ENABLED": "true", "MTAPLUGIN_EXIM_ENABLED": "1"})
    assert parts(on) == (*PARTS, "lmtp", "exim")


@pytest.mark.parametrize(
    ("key", "value"),
    [("MTAPLUGIN_LMTP_SOCKET", "lmtp.sock"), ("MTAPLUGIN_EXIM_SOCKET", "inet:25@127.0.0.1")],
)
def test_bad_front_end_sockets_are_refused_naming_the_key(key: str, value: str) -> None:
    from mtaplugin.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        config.load(environ={key: value})
    assert key[len("MTAPLUGIN_") :].lower().replace("_", ".", 1) in str(err.value)


# --- hardening (security review L7, M8) -------------------------------------------------------
ALL_UNITS = [
    (UNITS, "mtaplugin.service"),
    (UNITS, "mtaplugin@.service"),
    (PACKAGE, "mtaplugin.service"),
    (PACKAGE, "mtaplugin@.service"),
]
UNIT_IDS = [f"{where.parent.name}/{where.name}/{name}" for where, name in ALL_UNITS]
HARDENING = {
    # files: the database and keys 0640, in a directory of mtaplugin's and its group's only
    "UMask": "0027",
    "StateDirectoryMode": "0750",
    # the sockets only: the MTA passes through; each socket is 0660 with the MTA's group
    "RuntimeDirectoryMode": "0751",
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "PrivateMounts": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "ProtectProc": "invisible",
    "CapabilityBoundingSet": "",
    "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "RemoveIPC": "yes",
    "LockPersonality": "yes",
    "SystemCallArchitectures": "native",
    "SystemCallFilter": "@system-service",
    "SystemCallErrorNumber": "EPERM",
}


@pytest.mark.parametrize(("where", "name"), ALL_UNITS, ids=UNIT_IDS)
def test_every_unit_is_hardened(where: Path, name: str) -> None:
    service = unit(name, where)["Service"]
    assert {k: service.get(k) for k in HARDENING} == HARDENING
    # netlink: postmap (lookup.tables_dir) lists the interfaces, and dies without it
    families = set(service["RestrictAddressFamilies"].split())
    assert families == {"AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"}


def writable(service: configparser.SectionProxy) -> list[Path]:
    """What ProtectSystem=strict leaves writable: the unit's own directories, its
    ReadWritePaths= (a "-" only means "may be missing") and its private /tmp."""
    dirs = [Path("/var/lib", d) for d in service["StateDirectory"].split()]
    dirs += [Path("/run", d) for d in service["RuntimeDirectory"].split()]
    dirs += [Path(p.removeprefix("-")) for p in service.get("ReadWritePaths", "").split()]
    return [*dirs, Path("/tmp"), Path("/var/tmp")]


def written(s: config.Settings) -> dict[str, Path]:
    """The directories the service writes into: socket files, the SQLite database and its
    journal, the Postfix tables, var_dir (gunicorn's control socket, the web's key)."""
    out = {"site.var_dir": Path(s.site.var_dir)}
    for part in ("milter", "lookup", "lmtp", "exim"):
        sock = getattr(s, part).socket
        if isinstance(sock, UnixSocket):
            out[f"{part}.socket"] = Path(sock.path).parent
    if s.lookup.tables_dir:
        out["lookup.tables_dir"] = Path(s.lookup.tables_dir)
    db_file = sqlite_path(s.database.url)
    if db_file is not None:
        out["database.url"] = db_file.parent
    return out


#: the layouts the docs describe: the package's settings (Postfix, the sockets under its
#: queue directory); Exim and Sendmail hosts, the sockets in /run/mtaplugin
LAYOUTS = {
    "postfix": {},
    "exim-sendmail": {
        f"MTAPLUGIN_{part.upper()}_SOCKET": f"unix:/run/mtaplugin/{part}.sock"
        for part in ("milter", "lookup", "lmtp", "exim")
    },
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("where", "name"), ALL_UNITS, ids=UNIT_IDS)
def test_the_service_may_write_where_it_must(
    tmp_path: Path, where: Path, name: str, layout: str
) -> None:
    service = unit(name, where)["Service"]
    settings_file = tmp_path / "mtaplugin.toml"
    shutil.copy(PACKAGE / "mtaplugin.toml", settings_file)
    (tmp_path / "secrets.toml").write_text("")  # what postinst generates
    env = {k: v for k, v in environment(service).items() if k != "MTAPLUGIN_CONFIG"}
    s = config.load(settings_file, environ={**env, **LAYOUTS[layout]})
    allowed = writable(service)
    refused = {
        key: str(path)
        for key, path in written(s).items()
        if not any(path == d or d in path.parents for d in allowed)
    }
    assert refused == {}


def unit_copy(tmp_path: Path, where: Path, name: str) -> Path:
    """The unit file under a name systemd-analyze can load (a template instantiated)."""
    target = tmp_path / name.replace("@.service", "@milter.service")
    shutil.copy(where / name, target)
    return target


needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)


@needs_systemd_analyze
@pytest.mark.parametrize(("where", "name"), ALL_UNITS, ids=UNIT_IDS)
def test_systemd_rates_every_unit_ok(tmp_path: Path, where: Path, name: str) -> None:
    path = unit_copy(tmp_path, where, name)
    done = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--no-pager", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if "offline" in done.stderr and done.returncode != 0:
        pytest.skip(f"this systemd-analyze cannot rate a unit file: {done.stderr.strip()}")
    found = re.search(r"Overall exposure level for \S+: ([\d.]+)", done.stdout)
    assert found, done.stdout + done.stderr
    # 8.5 (deb) and 8.7 (contrib) before the review; 10 is "unsafe"
    assert float(found.group(1)) <= 2.0


@needs_systemd_analyze
@pytest.mark.parametrize(("where", "name"), ALL_UNITS, ids=UNIT_IDS)
def test_systemd_reads_every_line_of_every_unit(tmp_path: Path, where: Path, name: str) -> None:
    path = unit_copy(tmp_path, where, name)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    said = (done.stdout + done.stderr).splitlines()
    # the commands are installed by the package or by hand, not on the test machine
    assert [line for line in said if line.strip() and "is not executable" not in line] == []
