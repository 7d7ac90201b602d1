"""The sections of the settings file for the site: the database, the site's owner and
state, the posting rules, replies and tokens, retention, template fetching and alias
domains (one frozen dataclass each; :mod:`mtaplugin.config.sections` gathers every
section)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mtaplugin.config import values as v
from mtaplugin.config.fields import parse
from mtaplugin.config.values import HeaderCheck
from mtaplugin.enums import Action

#: where state lives when the settings name no other place (Debian's /var/lib/PACKAGE)
DEFAULT_STATE_DIR = "/var/lib/mtaplugin"
DEFAULT_DATABASE_URL = f"sqlite:///{DEFAULT_STATE_DIR}/mtaplugin.db"


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
    #: waits for readers to finish).  Commits stay durable either way: in WAL mode each
    #: commit's log is synced as the commit returns, after the write lock is free, so
    #: that concurrent commits share the disk's flushes (``mtaplugin.db.WalConnection``).
    #: ``false`` only when something that cannot write beside the database file
    #: reads it: a reader of a WAL database needs its ``-shm`` file (Postfix's contrib
    #: ``sqlite:`` table read through ``proxy:`` by the unprivileged ``postfix`` user;
    #: docs/postfix.md)
    sqlite_wal: bool = True


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
