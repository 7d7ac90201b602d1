"""Settings: one TOML file, read once into a frozen value whose fields are typed.

Every key has a default.  Every key can be overridden by an environment variable named
``MTAPLUGIN_<SECTION>_<KEY>`` (``MTAPLUGIN_DATABASE_URL``, ``MTAPLUGIN_MILTER_SOCKET``, ...).
The ``mtaplugin`` command reads ``--config FILE``, else ``$MTAPLUGIN_CONFIG``, else
``/etc/mtaplugin/mtaplugin.toml`` (:func:`~mtaplugin.config.load.locate`); with none of them
it refuses to run unless ``MTAPLUGIN_DATABASE_URL`` names the database.  :func:`load` itself
(the library) applies the defaults and the environment when given no file.  An unknown
key or a bad value is refused at start with a :class:`ConfigError` that names the key and
what was wrong.

- :mod:`~mtaplugin.config.values`: the typed values (:data:`Socket`, :class:`DnsFailure`,
  header checks) and their parsers;
- :mod:`~mtaplugin.config.sections`: the sections gathered into :class:`Settings`; each
  section is a dataclass in :mod:`~mtaplugin.config.listeners`,
  :mod:`~mtaplugin.config.mail` or :mod:`~mtaplugin.config.site`;
- :mod:`~mtaplugin.config.load`: reading the file and the environment, and the renamed keys
  still read for one release (:data:`~mtaplugin.config.load.RENAMED`).
"""

from __future__ import annotations

import ipaddress

from mtaplugin.config.listeners import (
    ApiSettings,
    EximSettings,
    LmtpSettings,
    LookupSettings,
    MilterSettings,
    WebSettings,
)
from mtaplugin.config.load import (
    CONFIG_ENV,
    DEFAULT_CONFIG,
    ENV_PREFIX,
    RENAMED,
    coerce,
    default_var_dir,
    load,
    locate,
    sqlite_path,
)
from mtaplugin.config.mail import (
    ArchiversSettings,
    AuthenticationSettings,
    BouncesSettings,
    DnsSettings,
    NntpSettings,
    OutboxSettings,
)
from mtaplugin.config.sections import Settings
from mtaplugin.config.site import (
    DatabaseSettings,
    RepliesSettings,
    RulesSettings,
    SiteSettings,
    TokensSettings,
)
from mtaplugin.config.values import DnsFailure, HeaderCheck, InetSocket, Socket, UnixSocket
from mtaplugin.errors import ConfigError


def milter_socket_path(settings: Settings) -> str | None:
    """The filesystem path of a unix milter socket, or None for inet."""
    sock = settings.milter.socket
    return sock.path if isinstance(sock, UnixSocket) else None


def is_loopback(listen: str) -> bool:
    """Whether ``HOST:PORT`` listens on a loopback address only (127.0.0.0/8, ::1,
    localhost)."""
    host = listen.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_is_loopback(settings: Settings) -> bool:
    return is_loopback(settings.api.listen)


__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG",
    "ENV_PREFIX",
    "RENAMED",
    "ApiSettings",
    "ArchiversSettings",
    "AuthenticationSettings",
    "BouncesSettings",
    "ConfigError",
    "DatabaseSettings",
    "DnsFailure",
    "DnsSettings",
    "EximSettings",
    "HeaderCheck",
    "InetSocket",
    "LmtpSettings",
    "LookupSettings",
    "MilterSettings",
    "NntpSettings",
    "OutboxSettings",
    "RepliesSettings",
    "RulesSettings",
    "Settings",
    "SiteSettings",
    "Socket",
    "TokensSettings",
    "UnixSocket",
    "WebSettings",
    "api_is_loopback",
    "coerce",
    "default_var_dir",
    "is_loopback",
    "load",
    "locate",
    "milter_socket_path",
    "sqlite_path",
]
