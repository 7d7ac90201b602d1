"""The sections of the settings file, one frozen dataclass each, with typed values.

Each field's ``metadata["parse"]`` is the parser of :mod:`mtaplugin.config.values` that
turns the file's or the environment's value into the field's type; without one, the kind
of the default decides (bool, int, float, str).  The comment above a field is its
documentation (docs/configuration.md's settings table follows it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from mtaplugin.config import values as v
from mtaplugin.config.values import (
    DnsFailure,
    HeaderCheck,
    InetSocket,
    Socket,
    TrustAuth,
    UnixSocket,
)
from mtaplugin.enums import Action

#: where state lives when the settings name no other place (Debian's /var/lib/PACKAGE)
DEFAULT_STATE_DIR = "/var/lib/mtaplugin"
DEFAULT_DATABASE_URL = f"sqlite:///{DEFAULT_STATE_DIR}/mtaplugin.db"

_BY_KIND: dict[type, v.Parser] = {bool: v.boolean, int: v.integer, float: v.number, str: v.text}


def parse(parser: v.Parser) -> dict[str, v.Parser]:
    """A field's metadata: ``parser`` turns its raw value into its type."""
    return {"parse": parser}


def parser_of(fld: dataclasses.Field[Any]) -> v.Parser:
    found = fld.metadata.get("parse")
    if found is not None:
        parse: v.Parser = found
        return parse
    return _BY_KIND[type(fld.default)]


@dataclass(frozen=True)
class DatabaseSettings:
    #: SQLAlchemy URL: sqlite:////absolute/path (four slashes), sqlite:///relative/path
    #: (against the settings file's directory) or postgresql+psycopg://user:pw@host/db
    url: str = field(default=DEFAULT_DATABASE_URL, metadata=parse(v.database_url))
    #: seconds to wait for a locked SQLite database or a PostgreSQL connection
    timeout: float = field(default=5.0, metadata=parse(v.seconds))
    #: PostgreSQL: let the driver prepare the statements a connection runs often (on the
    #: server, named).  ``false`` when mtaplugin reaches PostgreSQL through a pooler in
    #: transaction mode that does not keep prepared statements (PgBouncer before 1.21, or
    #: with ``max_prepared_statements = 0``): the next transaction may run on another
    #: server connection, where the name is unknown (docs/scaling.md)
    prepared_statements: bool = True
    #: SQLite: write-ahead log (WAL; one sync per commit, and readers never wait on the
    #: writer) instead of the rollback journal (several syncs per commit, and every write
    #: waits for readers to finish).  Commits stay durable either way (``synchronous =
    #: FULL``).  ``false`` only when something that cannot write beside the database file
    #: reads it: a reader of a WAL database needs its ``-shm`` file (Postfix's contrib
    #: ``sqlite:`` table read through ``proxy:`` by the unprivileged ``postfix`` user;
    #: docs/postfix.md)
    sqlite_wal: bool = True


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


@dataclass(frozen=True)
class OutboxSettings:
    """``[outbox]`` (was ``[outbound]``): how the worker hands the outbox to the MTA."""

    #: the MTA's re-injection listener (an smtpd without milters)
    host: str = "127.0.0.1"
    port: int = field(default=10026, metadata=parse(v.port))
    #: seconds for one SMTP conversation
    timeout: float = field(default=30.0, metadata=parse(v.seconds))
    #: recipients per SMTP transaction
    max_recipients: int = field(default=500, metadata=parse(v.positive))
    #: seconds after which a message still deferred is given up (Mailman's
    #: delivery_retry_period: 5 days)
    retry_period: float = field(default=432_000.0, metadata=parse(v.seconds))
    #: seconds before the first retry; each further retry waits twice as long ...
    backoff_first: float = field(default=60.0, metadata=parse(v.seconds))
    #: ... but never more than this many seconds
    backoff_max: float = field(default=3600.0, metadata=parse(v.seconds))
    #: outbox rows one worker takes per pass (and sends over one SMTP connection)
    batch_size: int = field(default=100, metadata=parse(v.positive))
    #: a post to a list with at most this many regular members is fanned out in place
    #: (the milter swaps the list recipient for the members and the MTA delivers); a larger
    #: list's copy goes through the outbox, so the sender gets the 250 at once.  0: always
    #: the outbox.
    expand_in_place_max: int = field(default=1000, metadata=parse(v.count))
    #: the re-injection listener takes ``MAIL FROM:<...> XVERP`` (Postfix, with
    #: ``smtpd_authorized_verp_clients`` naming the worker's address on that listener):
    #: a VERPed post is submitted once per ``max_recipients`` members and Postfix writes
    #: each member's ``list-bounces+member=domain@host``.  Off (Exim, Sendmail): the
    #: worker sends each member of a VERPed post a transaction of its own.
    xverp: bool = False


@dataclass(frozen=True)
class NntpSettings:
    """``[nntp]``: the site's news server, for the Usenet gateway (Mailman's
    ``NNTP_USERNAME`` / ``NNTP_PASSWORD`` and a list's ``nntp_host``, one for the site)."""

    #: the NNTP server; empty: the gateway is off for the whole site (nothing is queued)
    host: str = ""
    port: int = field(default=119, metadata=parse(v.port))
    #: AUTHINFO USER/PASS (RFC 4643) when set
    user: str = ""
    password: str = ""
    #: implicit TLS (NNTPS, usually port 563)
    tls: bool = False
    #: seconds the client waits on the server
    timeout: float = field(default=30.0, metadata=parse(v.seconds))


@dataclass(frozen=True)
class ArchiversSettings:
    """``[archivers]``: the external archivers a list may hand its archived posts to
    (Mailman's ``[archiver.*]`` sections), besides the built-in archive.  An archiver
    enabled here is enabled on every list that does not turn it off
    (``/lists/{list}/archivers``); one disabled here is off everywhere."""

    #: mail-archive.com: a copy of each archived post of a public list, by mail
    mail_archive: bool = False
    #: where the copies go (Mailman's ``recipient``)
    mail_archive_recipient: str = "archive@mail-archive.com"
    #: the archive's web address: ``List-Archive`` is it + the list's posting address,
    #: ``Archived-At`` it + the post's X-Message-ID-Hash
    mail_archive_base_url: str = "https://www.mail-archive.com/"
    #: a command (MHonArc or any other) fed each archived post on its standard input
    mhonarc: bool = False
    #: the command, split like a shell would (no shell runs it); ``$listname`` is the
    #: list's posting address, ``$list_id`` its List-Id; exit 0: archived, else tried again
    mhonarc_command: str = ""
    #: seconds the command may run
    mhonarc_timeout: float = field(default=60.0, metadata=parse(v.seconds))
    #: HyperKitty, through its archiver API (the mailman-hyperkitty plugin's protocol)
    hyperkitty: bool = False
    #: HyperKitty's address for its archiver API, e.g. ``http://localhost:8000/hyperkitty/``
    #: (HyperKitty answers it only from the addresses of its ``MAILMAN_ARCHIVER_FROM``)
    hyperkitty_base_url: str = ""
    #: HyperKitty's public address, named by ``Archived-At``/``List-Archive``, e.g.
    #: ``https://lists.example.org/hyperkitty/``; empty: ``hyperkitty_base_url``
    hyperkitty_web_url: str = ""
    #: HyperKitty's ``MAILMAN_ARCHIVER_KEY``
    hyperkitty_api_key: str = ""
    #: seconds the client waits on HyperKitty
    hyperkitty_timeout: float = field(default=30.0, metadata=parse(v.seconds))


@dataclass(frozen=True)
class SiteSettings:
    #: where notices to the site owner go
    site_owner: str = "postmaster@localhost"
    #: language of notices when nobody asked for another
    default_language: str = "en"
    #: directory for state files (the web's generated key, gunicorn's control socket);
    #: empty: beside the database (a SQLite file's directory), else /var/lib/mtaplugin
    var_dir: str = ""
    #: signs the one-click unsubscribe links of members' copies (at least 32 characters,
    #: e.g. ``python3 -c 'import secrets; print(secrets.token_urlsafe(32))'``); the same on
    #: every mail host that shares the database.  Empty: no one-click links.
    secret_key: str = field(default="", metadata=parse(v.secret_key))


@dataclass(frozen=True)
class RulesSettings:
    """``[rules]``: what the posting rules read, site-wide."""

    #: site-wide header checks, one ``Header: regex`` per line (Mailman's
    #: ``[antispam] header_checks``), checked on every list before its own header matches
    header_checks: tuple[HeaderCheck, ...] = field(default=(), metadata=parse(v.header_checks))
    #: what a site header check, or a list header match without an action, does
    header_match_action: Action = field(default=Action.hold, metadata=parse(v.action))
    #: body lines the administrivia rule (and the email command reader) reads
    email_commands_max_lines: int = field(default=10, metadata=parse(v.count))
    #: posts one From: address may offer in an hour, all lists of the site together; more
    #: get a 4xx naming rule ``sender-rate`` (0: no limit).  Counting costs a database
    #: write per post
    sender_posts_per_hour: int = field(default=0, metadata=parse(v.count))
    #: posts one list may take in an hour; more get a 4xx naming rule ``list-rate`` (0: no
    #: limit)
    list_posts_per_hour: int = field(default=0, metadata=parse(v.count))
    #: lists with more members than this refuse posts from nonmembers with a 5xx naming
    #: rule ``nonmember-large-list`` (0: no limit)
    nonmember_posts_max_members: int = field(default=0, metadata=parse(v.count))


@dataclass(frozen=True)
class RepliesSettings:
    """``[replies]`` (were in ``[rules]``): how often mtaplugin answers one sender."""

    #: notices (held, refused) to one poster per list and kind, per day
    max_autoresponses_per_day: int = field(default=1, metadata=parse(v.count))
    #: replies to email commands (and autoresponses) to one sender per list, per day; the
    #: next one is a single "no more today" notice, then silence until the next day
    email_command_replies_per_day: int = field(default=10, metadata=parse(v.count))


@dataclass(frozen=True)
class TokensSettings:
    """``[tokens]`` (were in ``[rules]``): how long a confirmation token lives."""

    #: seconds a subscriber's confirmation token lives (Mailman's pending_request_life, 3d)
    pending_request_life: float = field(default=259_200.0, metadata=parse(v.seconds))
    #: seconds a moderator's token lives: held posts, subscription requests (180d)
    moderator_request_life: float = field(default=15_552_000.0, metadata=parse(v.seconds))


@dataclass(frozen=True)
class AuthenticationSettings:
    #: authserv-ids whose Authentication-Results headers are believed (your MTA's own
    #: verifier, e.g. OpenDKIM/OpenDMARC's), only the topmost ones (above the first
    #: Received: your MTA did not add); separated by commas or spaces, kept in lower
    #: case.  Empty: none.  Never read with ``verify_incoming``
    trusted_authserv_ids: tuple[str, ...] = field(default=(), metadata=parse(v.authserv_ids))
    #: the MTA ties SMTP AUTH logins to the envelope sender (Postfix
    #: smtpd_sender_login_maps + reject_sender_login_mismatch): a logged-in client then
    #: authenticates a From: that is its MAIL FROM address (off: only a From: equal to the
    #: login)
    trust_sasl_senders: bool = False
    #: check DKIM, SPF, DMARC and ARC of incoming posts here (dkimpy, pyspf, through the
    #: ``[dns]`` resolver); the post's own Authentication-Results are then never read.
    #: Off: believe the topmost Authentication-Results of ``trusted_authserv_ids``
    verify_incoming: bool = False
    #: the authserv-id of the Authentication-Results mtaplugin records (in the ARC set);
    #: empty: this host's name
    authserv_id: str = field(default="", metadata=parse(v.host_name))
    #: ARC-seal every list copy that leaves (with the list domain's DKIM key)
    arc_seal: bool = True


@dataclass(frozen=True)
class DnsSettings:
    #: nameservers for the DMARC, DKIM and SPF lookups (IP addresses, separated by commas
    #: or spaces); empty: the system's /etc/resolv.conf
    nameservers: tuple[str, ...] = field(default=(), metadata=parse(v.ip_addresses))
    #: their port (only with nameservers)
    port: int = field(default=53, metadata=parse(v.port))
    #: seconds one lookup may take in all (every server and retry)
    timeout: float = field(default=2.0, metadata=parse(v.seconds))
    #: answers kept (for their TTL) in the cache shared by all lookups; 0: no cache
    cache_size: int = field(default=4096, metadata=parse(v.count))
    #: what a DMARC policy lookup that DNS cannot answer gives: "tempfail" (4xx: the
    #: sender retries; nothing is lost and nothing is sent unmitigated) or "mitigate"
    #: (Mailman's behaviour: treat the domain as if it published p=reject)
    on_failure: DnsFailure = field(default=DnsFailure.tempfail, metadata=parse(v.dns_failure))


@dataclass(frozen=True)
class BouncesSettings:
    #: VERP each member's own copy (personalized lists): its envelope sender names the
    #: member, ``list-bounces+member=example.org@host``, so that any bounce names its member
    verp_personalized_deliveries: bool = False
    #: VERP every Nth post of a list to all its members (0: never; 1: every post)
    verp_delivery_interval: int = field(default=0, metadata=parse(v.count))
    #: before bounces disable a member, send a VERPed probe; only its bounce disables
    verp_probes: bool = False


@dataclass(frozen=True)
class RetentionSettings:
    """``[retention]``: how many days the scheduler's ``housekeeping`` job keeps old rows
    (0: keep them forever)."""

    #: outbox rows sent to every recipient, counted from when they were queued
    sent_outbox_days: int = field(default=7, metadata=parse(v.count))
    #: outbox rows given up on (refused for good, or still deferred after retry_period)
    failed_outbox_days: int = field(default=30, metadata=parse(v.count))
    #: bounce events already processed (counted into a member's score, or forwarded)
    bounce_events_days: int = field(default=90, metadata=parse(v.count))
    #: posts content filtering kept from the members (filter_action ``preserve``)
    filtered_posts_days: int = field(default=30, metadata=parse(v.count))
    #: records of automatic replies sent (the per-sender daily caps read one day back)
    autoresponse_records_days: int = field(default=7, metadata=parse(v.count))
    #: entries of the audit log (who approved, discarded, subscribed... what)
    audit_log_days: int = field(default=365, metadata=parse(v.count))


@dataclass(frozen=True)
class TemplatesSettings:
    """``[templates]``: how template URIs (REST ``uris``, Postorius) are fetched."""

    #: seconds one http(s) fetch may take in all (Mailman's REQUEST_TIMEOUT, 5)
    fetch_timeout: float = field(default=5.0, metadata=parse(v.seconds))
    #: bytes a fetched template may have; a longer answer is refused (the old text stays)
    max_size: int = field(default=262_144, metadata=parse(v.count))
    #: seconds a fetched text is used before it is fetched again (Mailman's cache_life, 7d)
    cache_life: float = field(default=604_800.0, metadata=parse(v.seconds))
    #: seconds before a failed fetch is tried again (the old text is used meanwhile)
    retry_after: float = field(default=900.0, metadata=parse(v.seconds))
    #: hosts fetched from although they are not public (loopback, private...), by the name
    #: the URI gives: ``"postorius.internal"``, or ``"127.0.0.1:8000"`` (credentials go to a
    #: loopback address only when the entry names its port); list owners may set URIs of
    #: these hosts too
    allow_hosts: tuple[str, ...] = field(default=(), metadata=parse(v.words))


@dataclass(frozen=True)
class DomainsSettings:
    """``[domains]``: which alias domains (Mailman's ``alias_domain``) a domain may take.
    An alias domain's mail goes to mtaplugin (the Postfix tables list it), so the site
    admin alone sets one, and never to another tenant's domain, a public suffix or one of
    the site's own mail domains (docs/security.md)."""

    #: the alias domains a domain owner may set for their own domain (REST, web); empty:
    #: only the site admin sets ``alias_domain``
    owner_aliases: tuple[str, ...] = field(default=(), metadata=parse(v.host_names))
    #: the site's own mail domains, never an alias domain (besides these, the host part of
    #: ``site.site_owner`` and what Postfix's ``mydestination``, ``virtual_alias_domains``,
    #: ``virtual_mailbox_domains`` and ``relay_domains`` hold, when mtaplugin can run
    #: ``postconf``: ``$MAIL_CONFIG`` or /etc/postfix)
    site_mail_domains: tuple[str, ...] = field(default=(), metadata=parse(v.host_names))


@dataclass(frozen=True)
class Settings:
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    milter: MilterSettings = field(default_factory=MilterSettings)
    lookup: LookupSettings = field(default_factory=LookupSettings)
    lmtp: LmtpSettings = field(default_factory=LmtpSettings)
    exim: EximSettings = field(default_factory=EximSettings)
    api: ApiSettings = field(default_factory=ApiSettings)
    web: WebSettings = field(default_factory=WebSettings)
    outbox: OutboxSettings = field(default_factory=OutboxSettings)
    nntp: NntpSettings = field(default_factory=NntpSettings)
    archivers: ArchiversSettings = field(default_factory=ArchiversSettings)
    site: SiteSettings = field(default_factory=SiteSettings)
    rules: RulesSettings = field(default_factory=RulesSettings)
    replies: RepliesSettings = field(default_factory=RepliesSettings)
    tokens: TokensSettings = field(default_factory=TokensSettings)
    authentication: AuthenticationSettings = field(default_factory=AuthenticationSettings)
    dns: DnsSettings = field(default_factory=DnsSettings)
    bounces: BouncesSettings = field(default_factory=BouncesSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    templates: TemplatesSettings = field(default_factory=TemplatesSettings)
    domains: DomainsSettings = field(default_factory=DomainsSettings)
    #: the file these settings came from, if any
    source: str | None = None


#: the sections of the file, by name
SECTIONS: dict[str, type] = {
    f.name: f.default_factory  # type: ignore[misc]
    for f in dataclasses.fields(Settings)
    if f.name != "source"
}

__all__ = [
    "ApiSettings",
    "ArchiversSettings",
    "AuthenticationSettings",
    "BouncesSettings",
    "DatabaseSettings",
    "DnsSettings",
    "DomainsSettings",
    "EximSettings",
    "InetSocket",
    "LmtpSettings",
    "LookupSettings",
    "MilterSettings",
    "NntpSettings",
    "OutboxSettings",
    "RepliesSettings",
    "RetentionSettings",
    "RulesSettings",
    "Settings",
    "SiteSettings",
    "TemplatesSettings",
    "TokensSettings",
    "WebSettings",
]
