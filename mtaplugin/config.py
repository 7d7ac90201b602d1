"""Settings: one TOML file, read once into a frozen, typed value.

Every key has a default.  Every key can be overridden by an environment variable named
``MTAPLUGIN_<SECTION>_<KEY>`` (``MTAPLUGIN_DATABASE_URL``, ``MTAPLUGIN_MILTER_SOCKET``, ...).
The file comes from ``mtaplugin --config FILE`` or ``MTAPLUGIN_CONFIG``; without either,
the defaults (and the environment) apply.  An unknown key or a bad value is refused at start
with a :class:`ConfigError` that names the key.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from mtaplugin.errors import ConfigError
from mtaplugin.i18n import _

ENV_PREFIX = "MTAPLUGIN_"
CONFIG_ENV = "MTAPLUGIN_CONFIG"

_SOCKET_RE = re.compile(
    r"^(unix:(?P<path>/.+)|inet:(?P<port>\d{1,5})@(?P<host>[0-9A-Za-z.:\-\[\]]+))$"
)
_ACTIONS = ("hold", "reject", "discard", "accept", "defer")
_DNS_FAILURES = ("tempfail", "mitigate")
_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


@dataclass(frozen=True)
class DatabaseSettings:
    #: SQLAlchemy URL: sqlite:///path or postgresql+psycopg://user:pw@host/db
    url: str = "sqlite:///var/mtaplugin.db"
    #: seconds to wait for a locked SQLite database or a PostgreSQL connection
    timeout: float = 5.0


@dataclass(frozen=True)
class MilterSettings:
    #: ``unix:/path`` (default; no Nagle stalls) or ``inet:PORT@127.0.0.1``
    socket: str = "unix:var/milter.sock"
    #: seconds libmilter waits on the MTA before giving up on a connection
    timeout: int = 600
    #: mode of a unix socket, so that the MTA's unprivileged smtpd can connect
    socket_mode: int = 0o666


@dataclass(frozen=True)
class LookupSettings:
    #: the Postfix socketmap server (``relay_domains = socketmap:unix:PATH:domains``):
    #: a ``unix:/path`` socket
    socket: str = "unix:var/lookup.sock"


@dataclass(frozen=True)
class LmtpSettings:
    #: the LMTP front end (``mtaplugin lmtp``, Exim's lmtp transport): ``unix:/path`` or
    #: ``inet:PORT@127.0.0.1``
    socket: str = "unix:var/lmtp.sock"
    #: run it as part of ``mtaplugin serve``
    enabled: bool = False
    #: largest post accepted, in bytes (552 above)
    max_message_size: int = 52_428_800


@dataclass(frozen=True)
class EximSettings:
    #: the query socket of Exim's ACLs (``${readsocket{PATH}...}``): ``unix:/path``
    socket: str = "unix:var/exim.sock"
    #: run it as part of ``mtaplugin serve``
    enabled: bool = False
    #: largest query accepted, in bytes (a DATA query carries the whole post, base64)
    max_request_size: int = 80_000_000


@dataclass(frozen=True)
class ApiSettings:
    #: host:port for gunicorn; loopback by default
    listen: str = "127.0.0.1:8001"
    admin_user: str = "restadmin"
    admin_password: str = "restpass"
    workers: int = 2
    #: largest request body accepted, in bytes
    max_body_size: int = 1_048_576


@dataclass(frozen=True)
class OutboundSettings:
    #: the MTA's re-injection listener (an smtpd without milters)
    host: str = "127.0.0.1"
    port: int = 10026
    #: seconds for one SMTP conversation
    timeout: float = 30.0
    #: recipients per SMTP transaction
    max_recipients: int = 500
    #: seconds after which a message still deferred is given up (Mailman's
    #: delivery_retry_period: 5 days)
    retry_period: float = 432_000.0
    #: seconds before the first retry; each further retry waits twice as long ...
    backoff_first: float = 60.0
    #: ... but never more than this many seconds
    backoff_max: float = 3600.0
    #: outbox rows one worker takes per pass (and sends over one SMTP connection)
    batch_size: int = 100
    #: a post to a list with at most this many regular members is fanned out in place
    #: (the milter swaps the list recipient for the members and the MTA delivers); a larger
    #: list's copy goes through the outbox, so the sender gets the 250 at once.  0: always
    #: the outbox.
    expand_in_place_max: int = 1000


@dataclass(frozen=True)
class SiteSettings:
    #: where notices to the site owner go
    site_owner: str = "postmaster@localhost"
    #: language of notices when nobody asked for another
    default_language: str = "en"
    #: directory for the database, sockets and pid files
    var_dir: str = "var"
    #: signs the one-click unsubscribe links of members' copies (at least 32 characters,
    #: e.g. ``python3 -c 'import secrets; print(secrets.token_urlsafe(32))'``); the same on
    #: every mail host that shares the database.  Empty: no one-click links.
    secret_key: str = ""


@dataclass(frozen=True)
class RulesSettings:
    #: site-wide header checks, one ``Header: regex`` per line (Mailman's
    #: ``[antispam] header_checks``), checked on every list before its own header matches
    header_checks: str = ""
    #: what a site header check, or a list header match without an action, does
    header_match_action: str = "hold"
    #: body lines the administrivia rule reads
    email_commands_max_lines: int = 10
    #: notices (held, refused) to one poster per list and kind, per day
    max_autoresponses_per_day: int = 1
    #: seconds a subscriber's confirmation token lives (Mailman's pending_request_life, 3d)
    pending_request_life: float = 259_200.0
    #: seconds a moderator's token lives: held posts, subscription requests (180d)
    moderator_request_life: float = 15_552_000.0
    #: replies to email commands (and autoresponses) to one sender per list, per day; the
    #: next one is a single "no more today" notice, then silence until the next day
    email_command_replies_per_day: int = 10


@dataclass(frozen=True)
class AuthenticationSettings:
    #: authserv-ids whose Authentication-Results headers are believed (your MTA's own
    #: verifier, e.g. OpenDKIM/OpenDMARC's); separated by commas or spaces.  Empty: none.
    trusted_authserv_ids: str = ""
    #: the MTA makes SMTP AUTH users send only as their own addresses
    #: (Postfix reject_sender_login_mismatch): any logged-in client authenticates its From:
    trust_sasl_senders: bool = False
    #: check DKIM, SPF, DMARC and ARC of incoming posts here (dkimpy, pyspf, through the
    #: ``[dns]`` resolver).  Off: believe the Authentication-Results of
    #: ``trusted_authserv_ids`` (your MTA's verifier), as before
    verify_incoming: bool = False
    #: the authserv-id of the Authentication-Results mtaplugin records (in the ARC set);
    #: empty: this host's name
    authserv_id: str = ""
    #: ARC-seal every list copy that leaves (with the list domain's DKIM key)
    arc_seal: bool = True


@dataclass(frozen=True)
class DnsSettings:
    #: nameservers for the DMARC, DKIM and SPF lookups (IP addresses, separated by commas
    #: or spaces); empty: the system's /etc/resolv.conf
    nameservers: str = ""
    #: their port (only with nameservers)
    port: int = 53
    #: seconds one lookup may take in all (every server and retry)
    timeout: float = 2.0
    #: answers kept (for their TTL) in the cache shared by all lookups; 0: no cache
    cache_size: int = 4096
    #: what a DMARC policy lookup that DNS cannot answer gives: "tempfail" (4xx: the
    #: sender retries; nothing is lost and nothing is sent unmitigated) or "mitigate"
    #: (Mailman's behaviour: treat the domain as if it published p=reject)
    on_failure: str = "tempfail"


@dataclass(frozen=True)
class Settings:
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    milter: MilterSettings = field(default_factory=MilterSettings)
    lookup: LookupSettings = field(default_factory=LookupSettings)
    lmtp: LmtpSettings = field(default_factory=LmtpSettings)
    exim: EximSettings = field(default_factory=EximSettings)
    api: ApiSettings = field(default_factory=ApiSettings)
    outbound: OutboundSettings = field(default_factory=OutboundSettings)
    site: SiteSettings = field(default_factory=SiteSettings)
    rules: RulesSettings = field(default_factory=RulesSettings)
    authentication: AuthenticationSettings = field(default_factory=AuthenticationSettings)
    dns: DnsSettings = field(default_factory=DnsSettings)
    #: the file these settings came from, if any
    source: str | None = None


def _coerce(key: str, kind: type, value: Any) -> Any:
    """Turn a TOML or environment value into ``kind``, or raise naming ``key``."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in {"1", "true", "yes", "on"}:
            return True
        if isinstance(value, str) and value.lower() in {"0", "false", "no", "off"}:
            return False
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value, 0)
            except ValueError:
                pass
    elif kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    elif kind is str and isinstance(value, str):
        return value
    raise ConfigError(
        key, _("expected {kind}, got {value!r}").format(kind=kind.__name__, value=value)
    )


def _section_types(section_cls: type) -> dict[str, type]:
    hints = get_type_hints(section_cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(section_cls)}


def _validate(settings: Settings) -> None:
    m = _SOCKET_RE.match(settings.milter.socket)
    if not m:
        raise ConfigError(
            "milter.socket",
            _("expected 'unix:/path' or 'inet:PORT@HOST', got {value!r}").format(
                value=settings.milter.socket
            ),
        )
    if m.group("port") and not 0 < int(m.group("port")) < 65536:
        raise ConfigError("milter.socket", _("port out of range"))
    lm = _SOCKET_RE.match(settings.lmtp.socket)
    if not lm or (lm.group("port") and not 0 < int(lm.group("port")) < 65536):
        raise ConfigError(
            "lmtp.socket",
            _("expected 'unix:/path' or 'inet:PORT@HOST', got {value!r}").format(
                value=settings.lmtp.socket
            ),
        )
    if not re.match(r"^unix:/.+", settings.exim.socket):
        raise ConfigError(
            "exim.socket",
            _("expected 'unix:/path', got {value!r}").format(value=settings.exim.socket),
        )
    host, sep, port = settings.api.listen.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(
            "api.listen",
            _("expected 'HOST:PORT', got {value!r}").format(value=settings.api.listen),
        )
    if not 0 < settings.outbound.port < 65536:
        raise ConfigError("outbound.port", _("port out of range"))
    if not settings.database.url.startswith(("sqlite:", "postgresql")):
        raise ConfigError(
            "database.url",
            _("expected a sqlite:/// or postgresql:// URL, got {value!r}").format(
                value=settings.database.url
            ),
        )
    for key, number in (
        ("api.workers", settings.api.workers),
        ("api.max_body_size", settings.api.max_body_size),
        ("milter.timeout", settings.milter.timeout),
        ("outbound.max_recipients", settings.outbound.max_recipients),
        ("outbound.batch_size", settings.outbound.batch_size),
        ("lmtp.max_message_size", settings.lmtp.max_message_size),
        ("exim.max_request_size", settings.exim.max_request_size),
    ):
        if number <= 0:
            raise ConfigError(key, _("must be greater than 0"))
    if not re.match(r"^unix:/.+", settings.lookup.socket):
        raise ConfigError(
            "lookup.socket",
            _("expected 'unix:/path', got {value!r}").format(value=settings.lookup.socket),
        )
    if settings.site.secret_key and len(settings.site.secret_key) < 32:
        raise ConfigError("site.secret_key", _("must be at least 32 characters long"))
    if settings.rules.header_match_action not in _ACTIONS:
        raise ConfigError(
            "rules.header_match_action",
            _("expected one of {choices}, got {value!r}").format(
                choices=", ".join(_ACTIONS), value=settings.rules.header_match_action
            ),
        )
    for number_key, count in (
        ("rules.email_commands_max_lines", settings.rules.email_commands_max_lines),
        ("rules.max_autoresponses_per_day", settings.rules.max_autoresponses_per_day),
        ("rules.email_command_replies_per_day", settings.rules.email_command_replies_per_day),
        ("outbound.expand_in_place_max", settings.outbound.expand_in_place_max),
    ):
        if count < 0:
            raise ConfigError(number_key, _("must not be negative"))
    for line in settings.rules.header_checks.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        header, colon, regex = line.partition(":")
        if not colon or not header.strip():
            raise ConfigError(
                "rules.header_checks",
                _("expected 'Header: regex' lines, got {line!r}").format(line=line),
            )
        try:
            re.compile(regex.strip())
        except re.error as exc:
            raise ConfigError(
                "rules.header_checks",
                _("bad regular expression {regex!r}: {error}").format(
                    regex=regex.strip(), error=exc
                ),
            ) from None
    _validate_dns(settings.dns)
    authserv_id = settings.authentication.authserv_id
    if authserv_id and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.\-]*", authserv_id):
        raise ConfigError(
            "authentication.authserv_id",
            _("expected a host name, got {value!r}").format(value=authserv_id),
        )
    for key, seconds in (
        ("dns.timeout", settings.dns.timeout),
        ("database.timeout", settings.database.timeout),
        ("outbound.timeout", settings.outbound.timeout),
        ("outbound.retry_period", settings.outbound.retry_period),
        ("outbound.backoff_first", settings.outbound.backoff_first),
        ("outbound.backoff_max", settings.outbound.backoff_max),
        ("rules.pending_request_life", settings.rules.pending_request_life),
        ("rules.moderator_request_life", settings.rules.moderator_request_life),
    ):
        if seconds <= 0:
            raise ConfigError(key, _("must be a number of seconds greater than 0"))


def _validate_dns(dns: DnsSettings) -> None:
    for server in dns.nameservers.replace(",", " ").split():
        try:
            ipaddress.ip_address(server)
        except ValueError:
            raise ConfigError(
                "dns.nameservers",
                _("expected IP addresses, got {value!r}").format(value=server),
            ) from None
    if not 0 < dns.port < 65536:
        raise ConfigError("dns.port", _("port out of range"))
    if dns.cache_size < 0:
        raise ConfigError("dns.cache_size", _("must not be negative"))
    if dns.on_failure not in _DNS_FAILURES:
        raise ConfigError(
            "dns.on_failure",
            _("expected one of {choices}, got {value!r}").format(
                choices=", ".join(_DNS_FAILURES), value=dns.on_failure
            ),
        )


def _absolute(settings: Settings, base: Path) -> Settings:
    """Resolve relative paths (var_dir, sqlite file, unix socket) against ``base``."""
    site = settings.site
    var_dir = (
        str((base / site.var_dir).resolve()) if not os.path.isabs(site.var_dir) else site.var_dir
    )
    url = settings.database.url
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        rel = url[len("sqlite:///") :]
        if rel and rel != ":memory:":
            url = "sqlite:///" + str((base / rel).resolve())

    def _sock(value: str) -> str:
        if value.startswith("unix:") and not value.startswith("unix:/"):
            return "unix:" + str((base / value[5:]).resolve())
        return value

    return dataclasses.replace(
        settings,
        site=dataclasses.replace(site, var_dir=var_dir),
        database=dataclasses.replace(settings.database, url=url),
        milter=dataclasses.replace(settings.milter, socket=_sock(settings.milter.socket)),
        lookup=dataclasses.replace(settings.lookup, socket=_sock(settings.lookup.socket)),
        lmtp=dataclasses.replace(settings.lmtp, socket=_sock(settings.lmtp.socket)),
        exim=dataclasses.replace(settings.exim, socket=_sock(settings.exim.socket)),
    )


def load(
    path: str | os.PathLike[str] | None = None, environ: dict[str, str] | None = None
) -> Settings:
    """Read the settings once: defaults, then the TOML file, then the environment."""
    env = os.environ if environ is None else environ
    if path is None:
        path = env.get(CONFIG_ENV) or None
    data: dict[str, Any] = {}
    base = Path.cwd()
    if path is not None:
        p = Path(path)
        try:
            with p.open("rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise ConfigError("--config", _("no such file: {path}").format(path=p)) from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(
                "--config", _("{path} is not valid TOML: {error}").format(path=p, error=exc)
            ) from None
        base = p.resolve().parent
    sections: dict[str, Any] = {}
    top_types = _section_types(Settings)
    for name, value in data.items():
        if name not in top_types or name == "source":
            raise ConfigError(name, _("unknown section"))
        if not isinstance(value, dict):
            raise ConfigError(name, _("expected a [table]"))
    for fld in dataclasses.fields(Settings):
        if fld.name == "source":
            continue
        section_cls = top_types[fld.name]
        types = _section_types(section_cls)
        raw = dict(data.get(fld.name, {}))
        for key in raw:
            if key not in types:
                raise ConfigError(f"{fld.name}.{key}", _("unknown key"))
        for key in types:
            env_key = f"{ENV_PREFIX}{fld.name}_{key}".upper()
            if env_key in env:
                raw[key] = env[env_key]
        values = {k: _coerce(f"{fld.name}.{k}", types[k], v) for k, v in raw.items()}
        sections[fld.name] = section_cls(**values)
    settings = Settings(**sections, source=str(path) if path is not None else None)
    settings = _absolute(settings, base)
    _validate(settings)
    return settings


def milter_socket_path(settings: Settings) -> str | None:
    """The filesystem path of a unix milter socket, or None for inet."""
    sock = settings.milter.socket
    return sock[5:] if sock.startswith("unix:") else None


def api_is_loopback(settings: Settings) -> bool:
    host = settings.api.listen.rpartition(":")[0]
    return host in _LOOPBACK_HOSTS
