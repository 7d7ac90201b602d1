"""The sections of the settings file for the mail that comes in and goes out: the outbox,
the news server, the external archivers, how incoming posts are authenticated, DNS and
bounces (one frozen dataclass each; :mod:`mtaplugin.config.sections` gathers every
section)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mtaplugin.config import values as v
from mtaplugin.config.fields import parse
from mtaplugin.config.values import DnsFailure


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
