"""Which alias domain (Mailman's ``alias_domain``) a domain may take.

An alias domain's mail is list mail: the Postfix tables put it in ``relay_domains`` and
the transport map, so every message for it comes to mtaplugin.  Whoever could name any
domain there would take that domain's mail from the site: its members' copies, other
tenants' mail, the host's own (finding H3 of the security review).  So:

- the site admin sets an alias domain; a domain owner only one of ``[domains]
  owner_aliases`` (the allow-list the site admin keeps), for a domain they own;
- never, whoever asks: another domain or alias of the site (another tenant's), a public
  suffix (``com``, ``co.uk``, a one-label name), or one of the site's own mail domains
  (``[domains] site_mail_domains``, the host of ``site.site_owner``, and what Postfix
  already delivers or relays: ``mydestination``, ``virtual_alias_domains``,
  ``virtual_mailbox_domains``, ``relay_domains``, asked with ``postconf`` and ``postmap``
  when a Postfix configuration is found: ``$MAIL_CONFIG`` or /etc/postfix).

Setting the value a domain has already is no change and is not asked again; clearing it
is the domain's own business.  A refusal is an :class:`InvalidInput` naming
``alias_domain`` and why; nothing changes.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.config import Settings
from mtaplugin.config.postconf import PostconfError, Postfix, config_dir
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.mailauth.dmarc import is_public_suffix
from mtaplugin.model import Domain
from mtaplugin.vocabulary.addresses import check_domain

log = logging.getLogger(__name__)

FIELD = "alias_domain"
#: Postfix's parameters that name the domains it delivers or relays itself
POSTFIX_DOMAINS = (
    "mydestination",
    "virtual_alias_domains",
    "virtual_mailbox_domains",
    "relay_domains",
)
#: seconds one ``postconf`` or ``postmap`` may take
POSTFIX_TIMEOUT = 10.0
#: the names of mtaplugin's own Postfix tables (contrib/postfix): never asked
OWN_TABLES = ("mtaplugin-domains.", "mtaplugin/postfix/", "lookup.sock")


@dataclass(frozen=True)
class AliasRules:
    """Who asks, and what the site says about alias domains."""

    #: the site admin asks (REST admin, a server owner, the CLI, an import)
    site_admin: bool
    #: the alias domains a domain owner may set (``[domains] owner_aliases``)
    owner_aliases: frozenset[str] = frozenset()
    #: the site's own mail domains, as configured
    site_domains: frozenset[str] = frozenset()
    #: the Postfix configuration directory to ask; None: no Postfix here
    postfix: Path | None = None
    #: tables that are mtaplugin's own (its socketmap, its tables directory): not asked,
    #: they hold the site's domains and aliases, which the database answers already
    own_tables: tuple[str, ...] = OWN_TABLES

    @classmethod
    def of(cls, settings: Settings, site_admin: bool) -> AliasRules:
        own = set(settings.domains.site_mail_domains)
        _local, at, host = settings.site.site_owner.rpartition("@")
        if at and host:
            own.add(host.strip().lower().rstrip("."))
        tables = [settings.lookup.socket.path, *OWN_TABLES]
        if settings.lookup.tables_dir:
            tables.append(settings.lookup.tables_dir)
        return cls(
            site_admin=site_admin,
            owner_aliases=frozenset(settings.domains.owner_aliases),
            site_domains=frozenset(own),
            postfix=config_dir(None),
            own_tables=tuple(tables),
        )

    @classmethod
    def for_site_admin(cls) -> AliasRules:
        """The site admin without the settings at hand (an import): the checks of every
        request, Postfix's domains included."""
        return cls(site_admin=True, postfix=config_dir(None))


def check(session: Session, domain: Domain | None, value: str, rules: AliasRules) -> str | None:
    """The alias domain ``value`` for ``domain`` (None: a domain not created yet), checked;
    None clears it.  Raises :class:`InvalidInput` naming ``alias_domain``."""
    if not value.strip():
        return None
    alias = check_domain(value, FIELD)
    if domain is not None and alias == domain.alias_domain:
        return alias
    if domain is not None and alias == domain.mail_host:
        raise InvalidInput(FIELD, _("{host} is the domain itself").format(host=alias))
    if not rules.site_admin and alias not in rules.owner_aliases:
        raise InvalidInput(
            FIELD,
            _(
                "only the site administrator sets an alias domain, or a domain owner one of "
                "[domains] owner_aliases; {host} is not one of them"
            ).format(host=alias),
        )
    if is_public_suffix(alias):
        raise InvalidInput(
            FIELD, _("{host} is a public suffix, not a domain of yours").format(host=alias)
        )
    clash = session.scalar(
        select(Domain.mail_host).where(
            (Domain.alias_domain == alias) | (Domain.mail_host == alias),
            Domain.id != (domain.id if domain is not None else -1),
        )
    )
    if clash is not None:
        raise InvalidInput(
            FIELD,
            _("{host} is already a domain or an alias of this site ({other})").format(
                host=alias, other=clash
            ),
        )
    where = "[domains] site_mail_domains" if alias in rules.site_domains else None
    if where is None and rules.postfix is not None:
        found = postfix_handles(rules.postfix, alias, rules.own_tables)
        where = f"Postfix {found}" if found else None
    if where is not None:
        raise InvalidInput(
            FIELD,
            _("{host} is one of the site's own mail domains ({where})").format(
                host=alias, where=where
            ),
        )
    return alias


def postfix_handles(conf: Path, domain: str, own_tables: tuple[str, ...] = ()) -> str | None:
    """The Postfix parameter (``mydestination``...) that names ``domain``, literally or in
    one of its tables (except those naming one of ``own_tables``); None when none does or
    Postfix cannot be asked (logged)."""
    try:
        values = Postfix(conf).postconf("-x", "-h", *POSTFIX_DOMAINS).splitlines()
    except (PostconfError, OSError, subprocess.SubprocessError) as exc:
        log.warning("cannot read Postfix's domains in %s: %s", conf, exc)
        return None
    for parameter, value in zip(POSTFIX_DOMAINS, values, strict=False):
        for token in re.split(r"[\s,]+", value):
            if not token:
                continue
            if ":" in token and not token.startswith("["):
                if any(own in token for own in own_tables if own):
                    continue
                if _in_table(conf, token, domain):
                    return parameter
            elif token.lower().rstrip(".") == domain:
                return parameter
    return None


def _in_table(conf: Path, table: str, domain: str) -> bool:
    if shutil.which("postmap") is None:
        log.warning("postmap is not installed: cannot ask %s for %s", table, domain)
        return False
    try:
        done = subprocess.run(
            ["postmap", "-c", str(conf), "-q", domain, table],
            capture_output=True,
            text=True,
            timeout=POSTFIX_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("cannot ask %s for %s: %s", table, domain, exc)
        return False
    if done.returncode not in (0, 1):
        log.warning("cannot ask %s for %s: %s", table, domain, done.stderr.strip())
    return done.returncode == 0
