"""mtaplugin.config: defaults, the TOML file, the environment, and refusals naming the key."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest

from mtaplugin import config
from mtaplugin.errors import ConfigError

LOAD_MODULE = importlib.import_module("mtaplugin.config.load")


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def load_refused(path: Path | None = None, env: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        config.load(path, environ=env or {})
    return info.value


# --- defaults -----------------------------------------------------------------------------
def test_defaults_without_file_or_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    s = config.load(None, environ={})
    assert s.source is None
    assert s.api.listen == "127.0.0.1:8001"
    assert s.api.workers == 2
    assert s.api.max_body_size == 1_048_576
    assert s.milter.timeout == 600
    assert s.milter.socket_mode == 0o660
    assert s.milter.socket_group == "postfix"
    assert s.outbox.host == "127.0.0.1"
    assert s.outbox.port == 10026
    assert s.outbox.max_recipients == 500
    assert s.outbox.retry_period == 5 * 24 * 3600
    assert (s.outbox.backoff_first, s.outbox.backoff_max) == (60, 3600)
    assert s.outbox.batch_size == 100
    assert s.database.timeout == 5.0
    assert s.site.site_owner == "postmaster@localhost"
    assert s.site.default_language == "en"
    # The database and the state live where Debian keeps a package's state.
    assert s.database.url == "sqlite:////var/lib/mtaplugin/mtaplugin.db"
    assert s.site.var_dir == "/var/lib/mtaplugin"
    # Relative default sockets are made absolute against the working directory.
    cwd = tmp_path.resolve()
    assert s.milter.socket == config.UnixSocket(str(cwd / "var" / "milter.sock"), 0o660)
    assert str(s.milter.socket) == f"unix:{cwd / 'var' / 'milter.sock'}"
    assert config.milter_socket_path(s) == str(cwd / "var" / "milter.sock")
    assert config.api_is_loopback(s)


def test_settings_are_frozen(tmp_path: Path):
    s = config.load(write(tmp_path / "m.toml", ""), environ={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.api.workers = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.database = config.DatabaseSettings()  # type: ignore[misc]
    assert s.api.workers == 2


# --- the file -----------------------------------------------------------------------------
def test_toml_file_values_are_read(tmp_path: Path):
    path = write(
        tmp_path / "mtaplugin.toml",
        """
[database]
url = "postgresql+psycopg://u@db.test/lists"
timeout = 2
[milter]
socket = "inet:8899@127.0.0.1"
socket_mode = 0o660
[api]
listen = "0.0.0.0:9001"
workers = 7
[outbound]
host = "mta.test"
port = 2525
max_recipients = 50
retry_period = 86400
backoff_first = 30
backoff_max = 600.5
batch_size = 20
[site]
site_owner = "owner@site.test"
""",
    )
    s = config.load(path, environ={})
    assert s.source == str(path)
    assert s.database.url == "postgresql+psycopg://u@db.test/lists"
    assert s.database.timeout == 2.0
    assert isinstance(s.database.timeout, float)
    assert s.milter.socket == config.InetSocket("127.0.0.1", 8899)
    assert str(s.milter.socket) == "inet:8899@127.0.0.1"
    assert config.milter_socket_path(s) is None
    assert s.milter.socket_mode == 0o660
    assert s.api.listen == "0.0.0.0:9001"
    assert not config.api_is_loopback(s)
    assert s.api.workers == 7
    assert (s.outbox.host, s.outbox.port, s.outbox.max_recipients) == ("mta.test", 2525, 50)
    assert s.outbox.retry_period == 86400.0
    assert isinstance(s.outbox.retry_period, float)
    assert (s.outbox.backoff_first, s.outbox.backoff_max) == (30.0, 600.5)
    assert s.outbox.batch_size == 20
    assert s.site.site_owner == "owner@site.test"
    # Untouched keys keep their defaults.
    assert s.api.admin_user == "restadmin"
    assert s.outbox.timeout == 30.0


def test_relative_paths_resolve_against_the_config_files_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    etc = tmp_path / "etc" / "mtaplugin"
    etc.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = write(
        etc / "mtaplugin.toml",
        """
[database]
url = "sqlite:///data/lists.db"
[milter]
socket = "unix:run/milter.sock"
[site]
var_dir = "state"
""",
    )
    # A relative path to the file itself works too, from the working directory.
    s = config.load(Path("..") / "etc" / "mtaplugin" / "mtaplugin.toml", environ={})
    base = etc.resolve()
    assert s.database.url == f"sqlite:///{base / 'data' / 'lists.db'}"
    assert str(s.milter.socket) == f"unix:{base / 'run' / 'milter.sock'}"
    assert s.site.var_dir == str(base / "state")
    assert path.exists()


def test_absolute_paths_are_kept(tmp_path: Path):
    path = write(
        tmp_path / "m.toml",
        """
[database]
url = "sqlite:////srv/lists.db"
[milter]
socket = "unix:/run/mtaplugin/milter.sock"
[site]
var_dir = "/var/lib/mtaplugin"
""",
    )
    s = config.load(path, environ={})
    assert s.database.url == "sqlite:////srv/lists.db"
    assert str(s.milter.socket) == "unix:/run/mtaplugin/milter.sock"
    assert s.site.var_dir == "/var/lib/mtaplugin"


def test_config_file_from_environment_variable(tmp_path: Path):
    path = write(tmp_path / "from-env.toml", "[api]\nworkers = 9\n")
    s = config.load(None, environ={config.CONFIG_ENV: str(path)})
    assert s.api.workers == 9
    assert s.source == str(path)


def test_explicit_path_wins_over_mtaplugin_config(tmp_path: Path):
    a = write(tmp_path / "a.toml", "[api]\nworkers = 3\n")
    b = write(tmp_path / "b.toml", "[api]\nworkers = 4\n")
    s = config.load(a, environ={config.CONFIG_ENV: str(b)})
    assert s.api.workers == 3


def test_missing_file_is_refused(tmp_path: Path):
    err = load_refused(tmp_path / "nope.toml")
    assert err.key == "--config"
    assert "nope.toml" in str(err)


def test_invalid_toml_is_refused(tmp_path: Path):
    err = load_refused(write(tmp_path / "bad.toml", "[api\nworkers = 3\n"))
    assert err.key == "--config"
    assert "not valid TOML" in str(err)


# --- the environment ----------------------------------------------------------------------
def test_environment_overrides_file(tmp_path: Path):
    path = write(tmp_path / "m.toml", "[api]\nworkers = 3\n[outbound]\nport = 2525\n")
    s = config.load(
        path,
        environ={
            "MTAPLUGIN_API_WORKERS": "11",
            "MTAPLUGIN_OUTBOUND_HOST": "relay.test",
            "MTAPLUGIN_DATABASE_TIMEOUT": "0.25",
            "MTAPLUGIN_MILTER_SOCKET_MODE": "0o600",
            "MTAPLUGIN_DATABASE_URL": "postgresql+psycopg://x@h/d",
            "MTAPLUGIN_OUTBOUND_BATCH_SIZE": "7",
            "MTAPLUGIN_OUTBOUND_RETRY_PERIOD": "3600",
        },
    )
    assert s.api.workers == 11
    assert s.outbox.host == "relay.test"
    assert s.outbox.port == 2525  # from the file, not overridden
    assert s.database.timeout == 0.25
    assert s.milter.socket_mode == 0o600
    assert s.database.url == "postgresql+psycopg://x@h/d"
    assert (s.outbox.batch_size, s.outbox.retry_period) == (7, 3600.0)


def test_environment_relative_sqlite_path_resolves_against_config_dir(tmp_path: Path):
    path = write(tmp_path / "m.toml", "")
    s = config.load(path, environ={"MTAPLUGIN_DATABASE_URL": "sqlite:///rel/x.db"})
    assert s.database.url == f"sqlite:///{tmp_path.resolve() / 'rel' / 'x.db'}"


def test_bad_environment_value_names_the_key():
    err = load_refused(env={"MTAPLUGIN_API_WORKERS": "many"})
    assert err.key == "api.workers"
    assert str(err).startswith("api.workers:")
    assert "'many'" in str(err)


def test_environment_is_not_read_from_os_environ_when_given(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MTAPLUGIN_API_WORKERS", "nonsense")
    assert config.load(None, environ={}).api.workers == 2
    with pytest.raises(ConfigError, match=r"^api\.workers:"):
        config.load(None)


# --- refusals -----------------------------------------------------------------------------
def test_unknown_key_is_refused_naming_it(tmp_path: Path):
    err = load_refused(write(tmp_path / "m.toml", "[api]\nwrokers = 3\n"))
    assert err.key == "api.wrokers"
    assert "unknown key" in str(err)


def test_unknown_section_is_refused_naming_it(tmp_path: Path):
    err = load_refused(write(tmp_path / "m.toml", "[apis]\nworkers = 3\n"))
    assert err.key == "apis"
    assert "unknown section" in str(err)


def test_source_is_not_a_section(tmp_path: Path):
    err = load_refused(write(tmp_path / "m.toml", "[source]\nx = 1\n"))
    assert err.key == "source"


def test_a_section_must_be_a_table(tmp_path: Path):
    err = load_refused(write(tmp_path / "m.toml", 'api = "fast"\n'))
    assert err.key == "api"


def both_names(cases: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each ``[outbound]`` case again under its new name, ``[outbox]``."""
    renamed = [
        (
            text.replace("outbound", "outbox").replace("OUTBOUND", "OUTBOX"),
            key.replace("outbound", "outbox"),
        )
        for text, key in cases
        if key.startswith("outbound.")
    ]
    return cases + renamed


@pytest.mark.parametrize(
    ("toml", "key"),
    both_names(
        [
            ('[api]\nworkers = "two"\n', "api.workers"),
            ("[api]\nworkers = 2.5\n", "api.workers"),
            ("[api]\nworkers = true\n", "api.workers"),
            ("[api]\nworkers = 0\n", "api.workers"),
            ("[api]\nmax_body_size = -1\n", "api.max_body_size"),
            ('[api]\nlisten = "8001"\n', "api.listen"),
            ('[api]\nlisten = "localhost:http"\n', "api.listen"),
            ("[database]\nurl = 5\n", "database.url"),
            ('[database]\nurl = "mysql://x/y"\n', "database.url"),
            ('[database]\ntimeout = "soon"\n', "database.timeout"),
            ("[database]\ntimeout = false\n", "database.timeout"),
            ("[database]\ntimeout = 0\n", "database.timeout"),
            ("[outbound]\ntimeout = -1.5\n", "outbound.timeout"),
            ('[milter]\nsocket = "tcp:1234"\n', "milter.socket"),
            ('[milter]\nsocket = "inet:70000@127.0.0.1"\n', "milter.socket"),
            ("[milter]\ntimeout = 0\n", "milter.timeout"),
            ("[outbound]\nport = 0\n", "outbound.port"),
            ("[outbound]\nport = 65536\n", "outbound.port"),
            ("[outbound]\nmax_recipients = 0\n", "outbound.max_recipients"),
            ("[outbound]\nretry_period = 0\n", "outbound.retry_period"),
            ('[outbound]\nretry_period = "5d"\n', "outbound.retry_period"),
            ("[outbound]\nbackoff_first = -60\n", "outbound.backoff_first"),
            ("[outbound]\nbackoff_max = 0.0\n", "outbound.backoff_max"),
            ("[outbound]\nbatch_size = 0\n", "outbound.batch_size"),
            ("[outbound]\nbatch_size = 1.5\n", "outbound.batch_size"),
            ("[site]\nsite_owner = 1\n", "site.site_owner"),
            ("[lmtp]\nmax_bytes = 0\n", "lmtp.max_bytes"),
            ("[lmtp]\nmax_message_size = 0\n", "lmtp.max_message_size"),
            ("[lmtp]\nsocket_mode = 0o1777\n", "lmtp.socket_mode"),
            ('[lookup]\nsocket = "inet:8899@127.0.0.1"\n', "lookup.socket"),
            ('[exim]\nsocket = "inet:8899@127.0.0.1"\n', "exim.socket"),
            ("[tokens]\npending_request_life = 0\n", "tokens.pending_request_life"),
            ("[rules]\npending_request_life = 0\n", "rules.pending_request_life"),
            ("[replies]\nmax_autoresponses_per_day = -1\n", "replies.max_autoresponses_per_day"),
        ]
    ),
)
def test_bad_value_is_refused_naming_the_key(tmp_path: Path, toml: str, key: str):
    err = load_refused(write(tmp_path / "m.toml", toml))
    assert err.key == key
    assert str(err).startswith(f"{key}: ")


@pytest.mark.parametrize(
    ("name", "value", "key"),
    [
        (name.replace("OUTBOUND", "OUTBOX"), value, key.replace("outbound", "outbox"))
        for name, value, key in [
            ("MTAPLUGIN_OUTBOUND_PORT", "70000", "outbound.port"),
            ("MTAPLUGIN_OUTBOUND_BATCH_SIZE", "-1", "outbound.batch_size"),
            ("MTAPLUGIN_OUTBOUND_BACKOFF_MAX", "-5", "outbound.backoff_max"),
        ]
    ]
    + [
        ("MTAPLUGIN_API_WORKERS", "0", "api.workers"),
        ("MTAPLUGIN_OUTBOUND_PORT", "70000", "outbound.port"),
        ("MTAPLUGIN_OUTBOUND_BATCH_SIZE", "-1", "outbound.batch_size"),
        ("MTAPLUGIN_OUTBOUND_RETRY_PERIOD", "0", "outbound.retry_period"),
        ("MTAPLUGIN_OUTBOUND_BACKOFF_FIRST", "soon", "outbound.backoff_first"),
        ("MTAPLUGIN_OUTBOUND_BACKOFF_MAX", "-5", "outbound.backoff_max"),
        ("MTAPLUGIN_DATABASE_TIMEOUT", "fast", "database.timeout"),
        ("MTAPLUGIN_MILTER_SOCKET", "somewhere", "milter.socket"),
        ("MTAPLUGIN_API_LISTEN", "nohost", "api.listen"),
    ],
)
def test_bad_environment_values_are_refused(name: str, value: str, key: str):
    assert load_refused(env={name: value}).key == key


# --- where the settings come from, and var_dir -------------------------------------------
def test_var_dir_defaults_beside_the_sqlite_database_not_beside_the_file(tmp_path: Path):
    etc = tmp_path / "etc"
    etc.mkdir()
    path = write(etc / "m.toml", f'[database]\nurl = "sqlite:///{tmp_path}/state/lists.db"\n')
    s = config.load(path, environ={})
    assert s.site.var_dir == str(tmp_path / "state")
    # a relative database file: against the file's directory, and var_dir beside it
    s = config.load(write(etc / "r.toml", '[database]\nurl = "sqlite:///db/l.db"\n'), environ={})
    assert s.site.var_dir == str(etc.resolve() / "db")


def test_var_dir_defaults_to_var_lib_for_postgresql(tmp_path: Path):
    s = config.load(None, environ={"MTAPLUGIN_DATABASE_URL": "postgresql+psycopg://u@h/db"})
    assert s.site.var_dir == "/var/lib/mtaplugin"
    given = config.load(
        None,
        environ={
            "MTAPLUGIN_DATABASE_URL": "postgresql+psycopg://u@h/db",
            "MTAPLUGIN_SITE_VAR_DIR": str(tmp_path),
        },
    )
    assert given.site.var_dir == str(tmp_path)


def test_locate_prefers_the_option_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    default = write(tmp_path / "default.toml", "")
    monkeypatch.setattr(LOAD_MODULE, "DEFAULT_CONFIG", str(default))
    assert config.locate("given.toml", {config.CONFIG_ENV: "env.toml"}) == "given.toml"
    assert config.locate(None, {config.CONFIG_ENV: "env.toml"}) == "env.toml"
    # the database named in the environment: the environment alone, not the default file
    assert config.locate(None, {"MTAPLUGIN_DATABASE_URL": "sqlite:////x.db"}) is None
    assert config.locate(None, {}) == str(default)


def test_locate_without_any_settings_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(LOAD_MODULE, "DEFAULT_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError) as info:
        config.locate(None, {})
    assert info.value.key == "--config"
    text = str(info.value)
    assert str(tmp_path / "missing.toml") in text
    assert "MTAPLUGIN_CONFIG" in text


def test_the_command_without_settings_makes_no_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    from mtaplugin.cli import main

    monkeypatch.setattr(LOAD_MODULE, "DEFAULT_CONFIG", str(tmp_path / "etc" / "mtaplugin.toml"))
    monkeypatch.delenv("MTAPLUGIN_CONFIG", raising=False)
    monkeypatch.delenv("MTAPLUGIN_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["db", "upgrade"]) == 1
    err = capsys.readouterr().err
    assert "no settings file" in err and str(tmp_path / "etc" / "mtaplugin.toml") in err
    assert list(tmp_path.iterdir()) == []
