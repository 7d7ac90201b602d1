"""The composition root: :func:`build` makes, from the settings, everything a process uses.

Every process starts here -- the milter, the LMTP front end, the pipe, the Exim query and
socketmap servers, the worker, the REST API and the web pages (in each gunicorn worker),
and the CLI -- and gets its parts from the :class:`World`:

- the process language (``site.default_language``);
- mail authentication hooked into dkimpy and pyspf (:func:`mtaplugin.mailauth.service.install`:
  RSA signatures through OpenSSL, SPF lookups through our resolver), once per process;
- one SQLAlchemy engine and its sessionmaker (:func:`mtaplugin.db.connect`);
- one DNS resolver (``[dns]``), shared by the DMARC, DKIM and SPF lookups;
- the mail-authentication service (``[authentication]``): incoming checks, DMARC
  policies, the DKIM signature and ARC seal of what leaves;
- the clock (:func:`mtaplugin.clock.system_clock`; tests pass a ManualClock).

Nothing else builds these from the settings, and nothing keeps them in a module-level
cache.  The list engine the front ends call is made from a world by :func:`list_engine`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mtaplugin.clock import Clock, system_clock
from mtaplugin.config import Settings
from mtaplugin.i18n import set_default_language

# The parts are imported when a world is built: `mtaplugin --help` needs none of them.
if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

    from mtaplugin.engine import ListEngine
    from mtaplugin.mailauth.resolver import Resolver
    from mtaplugin.mailauth.service import Deliverability
    from mtaplugin.manage.subscriptions import WorkflowSettings
    from mtaplugin.relay.deliver import Delivery
    from mtaplugin.relay.smtp import Transport


@dataclass(frozen=True)
class World:
    """What one process works with; made once, by :func:`build`."""

    settings: Settings
    #: the SQLAlchemy engine (one connection pool per process)
    db: Engine
    sessions: sessionmaker[Session]
    resolver: Resolver
    #: DKIM/SPF/DMARC/ARC checks of incoming posts, DMARC policies, signing and sealing
    mailauth: Deliverability
    clock: Clock

    def close(self) -> None:
        """Give the database connections back (the end of a process or a test)."""
        self.db.dispose()


def resolver(settings: Settings) -> Resolver:
    """The resolver the ``[dns]`` section describes."""
    from mtaplugin.mailauth.resolver import Resolver

    dns = settings.dns
    return Resolver(dns.nameservers, dns.port, dns.timeout, dns.cache_size)


def mailauth(settings: Settings, dns: Resolver) -> Deliverability:
    """The mail-authentication service the ``[authentication]`` section describes."""
    from mtaplugin.mailauth.service import Deliverability

    auth = settings.authentication
    return Deliverability(
        dns,
        authserv_id=auth.authserv_id,
        verify_incoming=auth.verify_incoming,
        trusted_authserv_ids=auth.trusted_authserv_ids,
        on_failure=settings.dns.on_failure,
        arc_seal=auth.arc_seal,
    )


def workflow(settings: Settings, clock: Clock = system_clock) -> WorkflowSettings:
    """What the subscription workflow reads: the ``[tokens]`` lifetimes, the site owner and
    the clock."""
    from mtaplugin.manage.subscriptions import WorkflowSettings

    return WorkflowSettings.from_settings(settings, clock)


def build(settings: Settings, *, db: Engine | None = None, clock: Clock = system_clock) -> World:
    """The world of one process.  ``db``: an engine made already (tests share one)."""
    from mtaplugin.db import connect, sessionmaker_for
    from mtaplugin.mailauth.service import install

    set_default_language(settings.site.default_language)
    install()
    engine = db if db is not None else connect(settings)
    dns = resolver(settings)
    return World(
        settings=settings,
        db=engine,
        sessions=sessionmaker_for(engine),
        resolver=dns,
        mailauth=mailauth(settings, dns),
        clock=clock,
    )


def list_engine(world: World) -> ListEngine:
    """The engine the SMTP front ends call (RCPT and end-of-message decisions)."""
    from mtaplugin.commands.mail import CommandPolicy
    from mtaplugin.copies.return_path import VerpPolicy
    from mtaplugin.engine import ListEngine
    from mtaplugin.engine.known_domains import KnownDomains
    from mtaplugin.mailauth.identity import AuthenticationPolicy
    from mtaplugin.posting.rules.base import SitePolicy

    s = world.settings
    return ListEngine(
        world.sessions,
        site_owner=s.site.site_owner,
        site_policy=SitePolicy(
            header_checks=s.rules.header_checks,
            header_match_action=s.rules.header_match_action,
            email_commands_max_lines=s.rules.email_commands_max_lines,
            sender_posts_per_hour=s.rules.sender_posts_per_hour,
            list_posts_per_hour=s.rules.list_posts_per_hour,
            nonmember_posts_max_members=s.rules.nonmember_posts_max_members,
        ),
        auth_policy=AuthenticationPolicy(
            trusted_authserv_ids=frozenset(s.authentication.trusted_authserv_ids),
            trust_sasl_senders=s.authentication.trust_sasl_senders,
        ),
        max_autoresponses_per_day=s.replies.max_autoresponses_per_day,
        expand_in_place_max=s.outbox.expand_in_place_max,
        secret_key=s.site.secret_key,
        mailauth=world.mailauth,
        command_policy=CommandPolicy(
            workflow=workflow(s, world.clock),
            max_lines=s.rules.email_commands_max_lines,
            replies_per_day=s.replies.email_command_replies_per_day,
        ),
        clock=world.clock,
        verp=VerpPolicy.from_settings(s.bounces),
        archivers=s.archivers,
        known_domains=KnownDomains(s.lookup.tables_dir),
    )


def outbox_delivery(world: World, transport: Transport | None = None) -> Delivery:
    """The worker's passes over the outbox: through SMTP to the MTA's re-injection
    listener (``[outbox]``) unless ``transport`` is given, each copy sealed by the world's
    mail authentication, on the world's clock."""
    from mtaplugin.copies.return_path import VerpPolicy
    from mtaplugin.relay.deliver import Delivery
    from mtaplugin.relay.smtp import SmtpTransport

    out = world.settings.outbox
    return Delivery(
        world.sessions,
        out,
        transport=transport or SmtpTransport.from_settings(out),
        sealer=world.mailauth,
        clock=world.clock,
        secret_key=world.settings.site.secret_key,
        verp=VerpPolicy.from_settings(world.settings.bounces),
    )
