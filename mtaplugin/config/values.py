"""The typed values a setting is parsed into, and the parsers that make them.

Each parser takes what TOML or the environment gave (a string from the environment, any
TOML value from the file) and returns the typed value, or raises :class:`ValueError` with
what was wrong; the loader adds the key.  Nothing else in mtaplugin parses a setting again:
a socket is a :data:`Socket`, a comma list a tuple, header checks are compiled.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar
from urllib.parse import urlsplit

from mtaplugin.enums import Action
from mtaplugin.i18n import N_, _
from mtaplugin.regexes import BadPattern, Pattern, compile_pattern

T = TypeVar("T")
E = TypeVar("E", bound=StrEnum)
N = TypeVar("N", int, float)
#: turns a raw TOML or environment value into a typed one (ValueError: what was wrong)
Parser = Callable[[Any], Any]

#: the mode a unix socket gets unless its section says otherwise (``milter.socket_mode``):
#: the owner and the MTA's group (``milter.socket_group``), nobody else
DEFAULT_SOCKET_MODE = 0o660
#: the group a unix socket gets unless its section says otherwise (``milter.socket_group``);
#: when the system has no such group, the process's own
DEFAULT_SOCKET_GROUP = "postfix"


@dataclass(frozen=True)
class UnixSocket:
    """``unix:/path``; created with ``mode`` and ``group`` so that the MTA's unprivileged
    user connects, and nobody else."""

    path: str
    mode: int = DEFAULT_SOCKET_MODE
    group: str = DEFAULT_SOCKET_GROUP
    #: the setting ``group`` came from (named when the group cannot be used)
    group_key: str = field(default="milter.socket_group", compare=False)

    def __str__(self) -> str:
        return f"unix:{self.path}"


@dataclass(frozen=True)
class InetSocket:
    """``inet:PORT@HOST``."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"inet:{self.port}@{self.host}"


#: where a server listens (the milter, the socketmap, LMTP, the Exim query server)
Socket = UnixSocket | InetSocket


class TrustAuth(StrEnum):
    """When the milter believes the SMTP AUTH login the MTA passes (``milter.trust_auth``)."""

    #: on a unix socket, which only the MTA's group can open (mode 0660, socket_group)
    unix = "unix"
    #: also on an ``inet:`` socket bound to a loopback address (any local user can connect)
    always = "always"
    #: never: a login never authenticates a From: address
    never = "never"


class DnsFailure(StrEnum):
    """What a DMARC lookup that DNS cannot answer gives (``dns.on_failure``)."""

    #: 4xx: the sender retries; nothing leaves unmitigated
    tempfail = "tempfail"
    #: Mailman's way: as if the domain published p=reject
    mitigate = "mitigate"


#: a site header check: the header's name and its compiled (case-insensitive) pattern
HeaderCheck = tuple[str, Pattern]

_SOCKET_RE = re.compile(
    r"^(unix:(?P<path>.+)|inet:(?P<port>\d{1,5})@(?P<host>[0-9A-Za-z.:\-\[\]]+))$"
)
_HOST_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*")


# --- the plain kinds ----------------------------------------------------------------------
def _expected(kind: str, value: Any) -> ValueError:
    return ValueError(_("expected {kind}, got {value!r}").format(kind=kind, value=value))


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"1", "true", "yes", "on"}:
        return True
    if isinstance(value, str) and value.lower() in {"0", "false", "no", "off"}:
        return False
    raise _expected("bool", value)


def integer(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            pass
    raise _expected("int", value)


def number(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise _expected("float", value)


def text(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _expected("str", value)


# --- checked numbers ----------------------------------------------------------------------
def _ranged(read: Callable[[Any], N], fits: Callable[[N], bool], why: str) -> Callable[[Any], N]:
    """The parser that reads a number with ``read`` and takes it if it ``fits``; else
    ``why`` (marked with ``N_``, translated when it is raised)."""

    def parse(value: Any) -> N:
        n = read(value)
        if not fits(n):
            raise ValueError(_(why))
        return n

    return parse


positive = _ranged(integer, lambda n: n > 0, N_("must be greater than 0"))
count = _ranged(integer, lambda n: n >= 0, N_("must not be negative"))
seconds = _ranged(number, lambda n: n > 0, N_("must be a number of seconds greater than 0"))
port = _ranged(integer, lambda n: 0 < n < 65536, N_("port out of range"))


def file_mode(value: Any) -> int:
    """A unix socket's mode, such as ``0o660``."""
    n = integer(value)
    if not 0 <= n <= 0o777:
        raise ValueError(_("expected a file mode such as 0o660, got {value!r}").format(value=value))
    return n


def socket_mode(value: Any) -> int:
    """A unix socket's mode: never writable by every user."""
    n = file_mode(value)
    if n & 0o002:
        raise ValueError(
            _(
                "{value} lets every local user connect and pose as the MTA; use 0o660 and "
                "socket_group"
            ).format(value=oct(n))
        )
    return n


def mode(value: Any) -> int | None:
    """A unix socket's own mode; empty: the one of ``milter.socket_mode``."""
    return None if value == "" else socket_mode(value)


def group_name(value: Any) -> str:
    """A unix group's name (the MTA's, e.g. ``postfix`` or ``Debian-exim``)."""
    name = text(value).strip()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*\$?", name):
        raise ValueError(_("expected a group name, got {value!r}").format(value=value))
    return name


def group(value: Any) -> str | None:
    """A unix socket's own group; empty: the one of ``milter.socket_group``."""
    return None if value == "" else group_name(value)


# --- sockets ------------------------------------------------------------------------------
def socket(value: Any) -> Socket:
    """``unix:/path`` (a relative path is made absolute by the loader) or
    ``inet:PORT@HOST``; the unix socket's mode is set by the loader."""
    spec = text(value)
    m = _SOCKET_RE.match(spec)
    if not m:
        raise ValueError(
            _("expected 'unix:/path' or 'inet:PORT@HOST', got {value!r}").format(value=spec)
        )
    if m.group("path") is not None:
        return UnixSocket(m.group("path"))
    if not 0 < int(m.group("port")) < 65536:
        raise ValueError(_("port out of range"))
    return InetSocket(m.group("host"), int(m.group("port")))


def unix_socket(value: Any) -> UnixSocket:
    """Only ``unix:/path`` (the socketmap and Exim query servers)."""
    spec = text(value)
    parsed = socket(spec) if spec.startswith("unix:") else None
    if not isinstance(parsed, UnixSocket):
        raise ValueError(_("expected 'unix:/path', got {value!r}").format(value=spec))
    return parsed


def listen(value: Any) -> str:
    """``HOST:PORT`` for gunicorn."""
    spec = text(value)
    host, sep, number_ = spec.rpartition(":")
    if not sep or not host or not number_.isdigit() or not 0 < int(number_) < 65536:
        raise ValueError(_("expected 'HOST:PORT', got {value!r}").format(value=spec))
    return spec


def listen_or_empty(value: Any) -> str:
    """``HOST:PORT``, or empty (not set)."""
    return "" if value == "" else listen(value)


# --- choices and lists --------------------------------------------------------------------
def choice(kind: type[E]) -> Callable[[Any], E]:
    def parse(value: Any) -> E:
        raw = text(value)
        try:
            return kind(raw)
        except ValueError:
            choices = ", ".join(m.value for m in kind)
            raise ValueError(
                _("expected one of {choices}, got {value!r}").format(choices=choices, value=raw)
            ) from None

    return parse


action = choice(Action)
dns_failure = choice(DnsFailure)
trust_auth = choice(TrustAuth)


def words(value: Any) -> tuple[str, ...]:
    """Separated by commas or spaces (or a TOML array of strings)."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    return tuple(text(value).replace(",", " ").split())


def authserv_ids(value: Any) -> tuple[str, ...]:
    """authserv-ids compare without case: kept in lower case."""
    return tuple(w.lower() for w in words(value))


def ip_addresses(value: Any) -> tuple[str, ...]:
    found = words(value)
    for server in found:
        try:
            ipaddress.ip_address(server)
        except ValueError:
            raise ValueError(
                _("expected IP addresses, got {value!r}").format(value=server)
            ) from None
    return found


def ip_networks(value: Any) -> tuple[str, ...]:
    """IP addresses or networks (``10.0.0.0/8``), separated by commas or spaces."""
    found = words(value)
    for net in found:
        try:
            ipaddress.ip_network(net, strict=False)
        except ValueError:
            raise ValueError(_("expected IP addresses, got {value!r}").format(value=net)) from None
    return found


def base_url(value: Any) -> str:
    """An ``http(s)://host[:port][/path]`` address without query or fragment, kept without
    its trailing ``/``; or empty."""
    url = text(value).strip()
    if not url:
        return ""
    parts = urlsplit(url)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or any(c.isspace() or ord(c) < 0x20 or c in '\\"<>' for c in url)
    ):
        raise ValueError(
            _("expected an http:// or https:// address (no query), got {value!r}").format(value=url)
        )
    return url.rstrip("/")


def host_name(value: Any) -> str:
    """A host name, or empty."""
    name = text(value)
    if name and not _HOST_NAME_RE.fullmatch(name):
        raise ValueError(_("expected a host name, got {value!r}").format(value=name))
    return name


def host_names(value: Any) -> tuple[str, ...]:
    """Host names (domains), in lower case, without a final dot."""
    found = tuple(w.lower().rstrip(".") for w in words(value))
    for name in found:
        if not _HOST_NAME_RE.fullmatch(name):
            raise ValueError(_("expected a host name, got {value!r}").format(value=name))
    return found


def database_url(value: Any) -> str:
    url = text(value)
    if not url.startswith(("sqlite:", "postgresql")):
        raise ValueError(
            _("expected a sqlite:/// or postgresql:// URL, got {value!r}").format(value=url)
        )
    return url


def secret_key(value: Any) -> str:
    key = text(value)
    if key and len(key) < 32:
        raise ValueError(_("must be at least 32 characters long"))
    return key


def header_checks(value: Any) -> tuple[HeaderCheck, ...]:
    """``Header: regex`` lines (Mailman's ``[antispam] header_checks``), searched without
    case; blank lines and lines starting with # are skipped."""
    checks: list[HeaderCheck] = []
    for line in text(value).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        header, colon, regex = line.partition(":")
        if not colon or not header.strip():
            raise ValueError(_("expected 'Header: regex' lines, got {line!r}").format(line=line))
        try:
            checks.append((header.strip(), compile_pattern(regex.strip())))
        except BadPattern as exc:
            raise ValueError(
                _("bad regular expression {regex!r}: {error}").format(
                    regex=regex.strip(), error=exc
                )
            ) from None
    return tuple(checks)
