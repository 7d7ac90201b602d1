"""The sections of the settings file for what mtaplugin listens on: the milter, the lookup
server, the LMTP front end, Exim's query socket, the REST API and the web UI (one frozen
dataclass each; :mod:`mtaplugin.config.sections` gathers every section)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mtaplugin.config import values as v
from mtaplugin.config.fields import parse
from mtaplugin.config.values import Socket, TrustAuth, UnixSocket


@dataclass(frozen=True)
class MilterSettings:
    #: ``unix:/path`` (default; no Nagle stalls) or ``inet:PORT@127.0.0.1``; for Postfix,
    #: under its queue directory, where chrooted smtpd reaches it
    #: (``/var/spool/postfix/mtaplugin/milter.sock``, docs/postfix.md)
    socket: Socket = field(default=UnixSocket("var/milter.sock"), metadata=parse(v.socket))
    #: seconds libmilter waits on the MTA before giving up on a connection
    timeout: int = field(default=600, metadata=parse(v.positive))
    #: mode of the milter's unix socket, so that the MTA's unprivileged smtpd can connect
    #: (never writable by every user: a mode with o+w is refused); also the mode of the
    #: other unix sockets that set none of their own
    socket_mode: int = field(default=v.DEFAULT_SOCKET_MODE, metadata=parse(v.socket_mode))
    #: group of the milter's unix socket: the MTA's (Postfix: ``postfix``, Exim:
    #: ``Debian-exim``); when the system has no such group, the process's own.  Also the
    #: group of the other unix sockets that set none of their own
    socket_group: str = field(default=v.DEFAULT_SOCKET_GROUP, metadata=parse(v.group_name))
    #: when the SMTP AUTH login the MTA passes (``{auth_authen}``) is believed: ``unix``
    #: (only on a unix socket, which only the MTA's group can open), ``always`` (also on an
    #: ``inet:`` socket on a loopback address: any local user can connect to it and claim
    #: a login) or ``never``
    trust_auth: TrustAuth = field(default=TrustAuth.unix, metadata=parse(v.trust_auth))
    #: log one line per MTA connection when it ends: its transactions, how many stepped
    #: aside at DATA (no list recipient, so nothing more of them reached the milter), the
    #: header fields, body chunks and ends of message the MTA sent, and the queue ids
    #: (to see what the milter costs the mail that is not for a list; docs/benchmarks.md)
    log_connections: bool = False
    #: milter processes accepting on the socket (each runs libmilter's threads; the
    #: interpreter lock of one process lets it use one core): 1 keeps one process
    processes: int = field(default=1, metadata=parse(v.positive))


@dataclass(frozen=True)
class LookupSettings:
    #: the socketmap server Postfix asks whether mtaplugin can take list mail now
    #: (``recipients``) and which domains hold lists (``domains``): a ``unix:/path``
    #: socket; Debian's chrooted smtpd reaches it under the queue directory
    #: (``/var/spool/postfix/mtaplugin/lookup.sock``)
    socket: UnixSocket = field(default=UnixSocket("var/lookup.sock"), metadata=parse(v.unix_socket))
    #: its mode (Postfix's processes run as "postfix"); empty: ``milter.socket_mode``
    socket_mode: int | None = field(default=None, metadata=parse(v.mode))
    #: a directory where the lookup server keeps two Postfix tables of the list domains,
    #: ``domains`` (``relay_domains``, the list-mail check) and ``transport``
    #: (``transport_maps``), rebuilt with ``postmap`` when the domains change, so that
    #: Postfix knows the list domains while mtaplugin is down; empty: no tables
    tables_dir: str = ""
    #: the Postfix table type of those tables (``postmap TYPE:FILE``)
    table_type: str = "hash"
    #: the ``postmap`` command
    postmap: str = "postmap"
    #: the value of each list domain in the ``domains`` table: the restriction class that
    #: defers list mail while mtaplugin cannot take it (contrib/postfix/main.cf)
    domains_value: str = "mtaplugin_list_mail"
    #: the value of each list domain in the ``transport`` table: where Postfix delivers
    #: list mail that no milter decided (mtaplugin's LMTP front end)
    transport: str = "lmtp:unix:mtaplugin/lmtp.sock"
    #: how often the tables are compared with the list database
    tables_interval: float = field(default=5.0, metadata=parse(v.seconds))
    #: its group; empty: ``milter.socket_group``
    socket_group: str | None = field(default=None, metadata=parse(v.group))


@dataclass(frozen=True)
class LmtpSettings:
    #: the LMTP front end (``mtaplugin lmtp``, Exim's lmtp transport, Postfix's transport
    #: for list mail no milter decided): ``unix:/path`` or ``inet:PORT@127.0.0.1``; for
    #: Postfix ``/var/spool/postfix/mtaplugin/lmtp.sock``
    socket: Socket = field(default=UnixSocket("var/lmtp.sock"), metadata=parse(v.socket))
    #: its mode when a unix socket (the MTA's delivery user connects); empty:
    #: ``milter.socket_mode``
    socket_mode: int | None = field(default=None, metadata=parse(v.mode))
    #: its group when a unix socket (Exim: ``Debian-exim``); empty: ``milter.socket_group``
    socket_group: str | None = field(default=None, metadata=parse(v.group))
    #: run it as part of ``mtaplugin serve``
    enabled: bool = False
    #: largest post accepted, in bytes (552 above); was ``max_message_size``
    max_bytes: int = field(default=52_428_800, metadata=parse(v.positive))


@dataclass(frozen=True)
class EximSettings:
    #: the query socket of Exim's ACLs (``${readsocket{PATH}...}``): ``unix:/path``
    socket: UnixSocket = field(default=UnixSocket("var/exim.sock"), metadata=parse(v.unix_socket))
    #: its mode (Exim runs as Debian-exim); empty: ``milter.socket_mode``
    socket_mode: int | None = field(default=None, metadata=parse(v.mode))
    #: its group (Exim: ``Debian-exim``); empty: ``milter.socket_group``
    socket_group: str | None = field(default=None, metadata=parse(v.group))
    #: run it as part of ``mtaplugin serve``
    enabled: bool = False
    #: largest query accepted, in bytes (a DATA query carries the whole post, base64)
    max_request_size: int = field(default=80_000_000, metadata=parse(v.positive))
    #: a file of the list domains, one per line, that the query server keeps current
    #: (every ``lookup.tables_interval``): contrib/exim's ``domainlist
    #: mtaplugin_list_domains = lsearch;FILE`` reads it, so that Exim asks mtaplugin only
    #: about list domains and an outage of mtaplugin touches list mail only; empty: none
    domains_file: str = ""


#: the REST admin's password until the configuration sets one; the API refuses to start
#: with it anywhere but on a loopback address
DEFAULT_ADMIN_PASSWORD = "restpass"


@dataclass(frozen=True)
class ApiSettings:
    #: host:port for gunicorn (the REST API, and the web UI unless ``web.listen`` is set);
    #: loopback by default.  Anywhere else only with an ``admin_password`` of your own
    listen: str = field(default="127.0.0.1:8001", metadata=parse(v.listen))
    #: the REST admin (HTTP Basic), Mailman's ``[webservice] admin_user``
    admin_user: str = "restadmin"
    #: its password; the default ("restpass") is refused unless ``listen`` is on loopback
    admin_password: str = DEFAULT_ADMIN_PASSWORD
    workers: int = field(default=2, metadata=parse(v.positive))
    #: largest request body accepted, in bytes
    max_body_size: int = field(default=1_048_576, metadata=parse(v.positive))
    #: the address clients reach the REST API at (``http://lists.example.org:8001``, a
    #: path allowed): every ``self_link`` is built from it, as Mailman builds them from
    #: ``[webservice] hostname``/``port``/``use_https``, so that a proxy between Postorius
    #: and mtaplugin may rewrite Host.  Empty: from the request
    base_url: str = field(default="", metadata=parse(v.base_url))


@dataclass(frozen=True)
class WebSettings:
    """``[web]``: where the web UI listens."""

    #: host:port of a listener of its own for the web UI (the one a TLS proxy fronts); the
    #: REST API (``/3.0/``, ``/3.1/``) is not served there, and the web UI no longer on
    #: ``api.listen``.  Empty: both on ``api.listen``
    listen: str = field(default="", metadata=parse(v.listen_or_empty))
    #: where a post written on the archive's pages (a reply, a new thread) is submitted by
    #: SMTP: the MTA's public listener, whose milter (or ACL) decides every post, so that
    #: the list's rules decide it as any other post; never the outbox's re-injection
    #: listener, which skips them
    submit_host: str = "127.0.0.1"
    #: its port: 25, where mail from the world arrives (not 587: the web has no SMTP AUTH
    #: login of the poster's)
    submit_port: int = field(default=25, metadata=parse(v.port))
    #: seconds for that SMTP conversation
    submit_timeout: float = field(default=30.0, metadata=parse(v.seconds))
    #: posts one user may send from the archive's pages per minute; 0: no posting from
    #: the web
    posts_per_minute: int = field(default=3, metadata=parse(v.count))
    #: anyone may create an account on ``/signup`` (with a link mailed to the address);
    #: off: the page says sign-up is closed, and accounts are made by the administrators
    #: (``mtaplugin users add``, REST)
    signup: bool = True
    #: the web UI's public address, e.g. ``https://lists.example.org``: the links mailed
    #: for a password reset, a sign-up and one more address point there (a list's
    #: confirmation links at its domain's ``base_url``, else here).  Never taken from the
    #: request's ``Host:``; empty: those pages mail no link and say why
    base_url: str = field(default="", metadata=parse(v.base_url))
    #: the proxies (IP addresses or networks) whose ``X-Forwarded-For`` names the client
    #: (the log-in limit counts per client) and whose ``X-Forwarded-Proto`` gunicorn
    #: believes (gunicorn's ``forwarded_allow_ips``, set from this)
    forwarded_allow_ips: tuple[str, ...] = field(
        default=("127.0.0.1", "::1"), metadata=parse(v.ip_networks)
    )
