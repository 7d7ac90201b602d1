"""Reading the settings: defaults, then the TOML file, then the environment; every value
parsed once into its type, every error naming the key as it was written.

Keys renamed in this release are still read, with a warning naming the new key
(:data:`RENAMED`); when both names are given, the new one wins.

A file may name other files at its top, ``include = ["secrets.toml"]`` (relative to its own
directory): they are read as if written at the top of the file, so a key the file sets
itself wins over an included one.  The Debian package keeps its generated secrets that way
(``/etc/mtaplugin/secrets.toml``, readable by the service only) out of the conffile.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mtaplugin.config import values
from mtaplugin.config.fields import parser_of
from mtaplugin.config.mail import OutboxSettings
from mtaplugin.config.sections import SECTIONS, Settings
from mtaplugin.config.site import DEFAULT_STATE_DIR
from mtaplugin.config.values import Socket, UnixSocket
from mtaplugin.errors import ConfigError
from mtaplugin.i18n import _

log = logging.getLogger("mtaplugin.config")

ENV_PREFIX = "MTAPLUGIN_"
CONFIG_ENV = "MTAPLUGIN_CONFIG"
#: the settings file of a process given no --config and no $MTAPLUGIN_CONFIG
DEFAULT_CONFIG = "/etc/mtaplugin/mtaplugin.toml"

#: old ``section.key`` → new ``section.key``; the old names are read for one release
RENAMED: dict[str, str] = {
    **{f"outbound.{f.name}": f"outbox.{f.name}" for f in dataclasses.fields(OutboxSettings)},
    "lmtp.max_message_size": "lmtp.max_bytes",
    "rules.max_autoresponses_per_day": "replies.max_autoresponses_per_day",
    "rules.email_command_replies_per_day": "replies.email_command_replies_per_day",
    "rules.pending_request_life": "tokens.pending_request_life",
    "rules.moderator_request_life": "tokens.moderator_request_life",
}
_OLD_SECTIONS = {old.partition(".")[0] for old in RENAMED} - set(SECTIONS)

#: a raw value and the key it was written under (named in errors)
_Raw = tuple[Any, str]


def _env_name(key: str) -> str:
    return (ENV_PREFIX + key.replace(".", "_")).upper()


def _renamed(old: str, where: str) -> str:
    new = RENAMED[old]
    log.warning(
        "%s: %s is deprecated, use %s (the old name is read until the next release)",
        where,
        old,
        new,
    )
    return new


def _from_file(data: dict[str, Any], where: str) -> dict[str, _Raw]:
    """``section.key`` → (value, key as written), old names read as their new ones."""
    found: dict[str, _Raw] = {}
    old_first = sorted(data, key=lambda name: name not in _OLD_SECTIONS)
    for name in old_first:
        table = data[name]
        if name not in SECTIONS and name not in _OLD_SECTIONS:
            raise ConfigError(name, _("unknown section"))
        if not isinstance(table, dict):
            raise ConfigError(name, _("expected a [table]"))
        known = _fields(SECTIONS[name]) if name in SECTIONS else set()
        # the old keys of a section before its own: the new name wins when both are given
        for key in sorted(table, key=lambda k: f"{name}.{k}" not in RENAMED):
            written = f"{name}.{key}"
            if written in RENAMED:
                found[_renamed(written, where)] = (table[key], written)
            elif key in known:
                found[written] = (table[key], written)
            else:
                raise ConfigError(written, _("unknown key"))
    return found


def _from_environment(env: Mapping[str, str]) -> dict[str, _Raw]:
    found: dict[str, _Raw] = {}
    for old in RENAMED:
        if _env_name(old) in env:
            found[_renamed(old, _env_name(old))] = (env[_env_name(old)], old)
    for name, section in SECTIONS.items():
        for key in _fields(section):
            written = f"{name}.{key}"
            if _env_name(written) in env:
                found[written] = (env[_env_name(written)], written)
    return found


def _fields(section: type) -> set[str]:
    return {f.name for f in dataclasses.fields(section)}


def coerce(key: str, parse: values.Parser, value: Any) -> Any:
    """``parse(value)``, or a :class:`ConfigError` naming ``key``."""
    try:
        return parse(value)
    except ValueError as exc:
        raise ConfigError(key, str(exc)) from None


#: the top-level key naming the files read before this one
INCLUDE = "include"


def _read(path: Path, key: str = "--config") -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(key, _("no such file: {path}").format(path=path)) from None
    except PermissionError:
        raise ConfigError(
            key, _("cannot read {path}: permission denied").format(path=path)
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            key, _("{path} is not valid TOML: {error}").format(path=path, error=exc)
        ) from None


def _included(data: dict[str, Any], path: Path) -> list[Path]:
    """The files ``data`` (read from ``path``) includes, taken out of ``data``."""
    names = data.pop(INCLUDE, [])
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(INCLUDE, _("expected a file name or a list of file names"))
    return [path.resolve().parent / name for name in names]


def _from_path(path: Path) -> dict[str, _Raw]:
    """The file's settings over those of the files it includes."""
    data = _read(path)
    found: dict[str, _Raw] = {}
    for included in _included(data, path):
        more = _read(included, INCLUDE)
        if INCLUDE in more:
            raise ConfigError(
                INCLUDE,
                _("{path}: an included file cannot include others").format(path=included),
            )
        found.update(_from_file(more, str(included)))
    found.update(_from_file(data, str(path)))
    return found


def _build(raw: dict[str, _Raw], source: str | None) -> Settings:
    sections: dict[str, Any] = {}
    for name, section in SECTIONS.items():
        kwargs = {}
        for fld in dataclasses.fields(section):
            if f"{name}.{fld.name}" in raw:
                value, written = raw[f"{name}.{fld.name}"]
                kwargs[fld.name] = coerce(written, parser_of(fld), value)
        sections[name] = section(**kwargs)
    return Settings(**sections, source=source)


def _absolute(settings: Settings, base: Path) -> Settings:
    """Relative paths (var_dir, the sqlite file, unix sockets) against ``base``; each unix
    socket gets its section's mode and group, or ``milter.socket_mode`` and ``socket_group``."""
    site = settings.site
    url = settings.database.url
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        rel = url[len("sqlite:///") :]
        if rel and rel != ":memory:":
            url = "sqlite:///" + str((base / rel).resolve())
    if not site.var_dir:
        var_dir = default_var_dir(url)
    elif os.path.isabs(site.var_dir):
        var_dir = site.var_dir
    else:
        var_dir = str((base / site.var_dir).resolve())
    default_mode = settings.milter.socket_mode
    default_group = settings.milter.socket_group

    def placed(sock: Socket, mode: int, group: str, key: str) -> Socket:
        if not isinstance(sock, UnixSocket):
            return sock
        path = sock.path if os.path.isabs(sock.path) else str((base / sock.path).resolve())
        return UnixSocket(path, mode, group, key)

    def section(name: str) -> Any:
        part = getattr(settings, name)
        mode = getattr(part, "socket_mode", None)
        own = default_mode if mode is None else mode
        own_group = getattr(part, "socket_group", None)
        group = own_group or default_group
        key = f"{name}.socket_group" if own_group else "milter.socket_group"
        return dataclasses.replace(
            part,
            socket=placed(part.socket, own, group, key),
            socket_mode=own,
            socket_group=group,
        )

    return dataclasses.replace(
        settings,
        site=dataclasses.replace(site, var_dir=var_dir),
        database=dataclasses.replace(settings.database, url=url),
        **{name: section(name) for name in ("milter", "lookup", "lmtp", "exim")},
    )


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///`` URL already made absolute, or None (another database,
    or SQLite in memory)."""
    if not url.startswith("sqlite:///"):
        return None
    rest = url[len("sqlite:///") :].partition("?")[0]
    if not rest or rest == ":memory:":
        return None
    return Path(rest)


def default_var_dir(url: str) -> str:
    """``site.var_dir`` when the settings give none: the SQLite file's directory, else
    :data:`~mtaplugin.config.site.DEFAULT_STATE_DIR`."""
    db_file = sqlite_path(url)
    return str(db_file.parent) if db_file is not None else DEFAULT_STATE_DIR


def locate(path: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The settings file a process reads: ``--config``, else ``$MTAPLUGIN_CONFIG``; else
    None when the environment names the database itself (``MTAPLUGIN_DATABASE_URL``: the
    settings come from the environment alone, as in the test labs); else
    :data:`DEFAULT_CONFIG` when it exists.  Otherwise a :class:`ConfigError` saying where
    it looked, so that a command run without settings never makes a database of its own."""
    env = os.environ if environ is None else environ
    if path:
        return path
    if env.get(CONFIG_ENV):
        return env[CONFIG_ENV]
    if env.get(_env_name("database.url")):
        return None
    if Path(DEFAULT_CONFIG).is_file():
        return DEFAULT_CONFIG
    raise ConfigError(
        "--config",
        _(
            "no settings file: looked for --config FILE, ${env} and {default}; "
            "give one of them (or set {db_env})"
        ).format(env=CONFIG_ENV, default=DEFAULT_CONFIG, db_env=_env_name("database.url")),
    )


def load(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Read the settings once: defaults, then the TOML file, then the environment."""
    env = os.environ if environ is None else environ
    if path is None:
        path = env.get(CONFIG_ENV) or None
    raw: dict[str, _Raw] = {}
    base = Path.cwd()
    if path is not None:
        raw = _from_path(Path(path))
        base = Path(path).resolve().parent
    raw.update(_from_environment(env))
    return _absolute(_build(raw, str(path) if path is not None else None), base)
