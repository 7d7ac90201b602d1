"""DMARC: alignment (RFC 7489 §3.1), policy discovery (§6.6.3) and Mailman's decision to
mitigate.

:func:`aligned` is the one alignment test of the package: relaxed means the same
organizational domain (found with :mod:`publicsuffixlist`), strict the same domain.

Discovery asks ``_dmarc.<From: domain>``; when that name has no DMARC record, it asks
``_dmarc.<organizational domain>`` (found with :mod:`publicsuffixlist`, one lookup in a
trie, not a scan of the list) and applies that record's ``sp=`` (else ``p=``).  Records not
starting with ``v=DMARC1`` are ignored; more than one DMARC record at a name means no
policy, and discovery stops there (RFC 7489 §6.6.3 step 5).

A DNS failure raises :class:`~mtaplugin.errors.TryLater` (``[dns] on_failure =
"tempfail"``, the default: the sender's MTA retries, and no post goes out unmitigated while
DNS is down), or, with ``on_failure = "mitigate"``, gives a policy with ``dns_error`` set
that :func:`should_mitigate` treats like ``p=reject``, as Mailman does.

:func:`should_mitigate` is the one mitigation decision: the dmarc-mitigation rule, the
members' copies and a released hold all ask it.  This module does no I/O of its own (the
resolver is passed in), so the pure posting core may import it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from publicsuffixlist import PublicSuffixList

from mtaplugin.errors import TryLater
from mtaplugin.vocabulary import addresses

if TYPE_CHECKING:
    from mtaplugin.mailauth.resolver import Resolver
    from mtaplugin.model import MailingList

POLICIES = ("none", "quarantine", "reject")
#: the policies that make a list mitigate (Mailman counts quarantine like reject)
STRICT_POLICIES = frozenset({"quarantine", "reject"})
NO_MITIGATION = "no_mitigation"
_MUNGE_OR_WRAP = frozenset({"munge_from", "wrap_message"})
_VERSION = re.compile(r"^\s*v\s*=\s*DMARC1\s*(;|$)")


@functools.cache
def _psl() -> PublicSuffixList:
    return PublicSuffixList()


def organizational_domain(domain: str) -> str:
    """The registered domain under its public suffix (``mail.example.co.uk`` →
    ``example.co.uk``); the domain itself when the list does not know its suffix."""
    domain = domain.lower().rstrip(".")
    return _psl().privatesuffix(domain) or domain


def is_public_suffix(domain: str) -> bool:
    """``domain`` is a public suffix (``com``, ``co.uk``, ``github.io``), or a name under
    no suffix the list knows (``localhost``): nobody's own domain."""
    return bool(_psl().is_public(domain.lower().rstrip(".")))


def aligned(domain: str, from_domain: str, strict: bool = False) -> bool:
    """``domain`` (a DKIM ``d=``, an SPF domain) is aligned with the From: domain:
    relaxed, the same organizational domain; strict, the same domain."""
    domain, from_domain = domain.lower().rstrip("."), from_domain.lower().rstrip(".")
    if not domain or not from_domain:
        return False
    if strict:
        return domain == from_domain
    return organizational_domain(domain) == organizational_domain(from_domain)


@dataclass(frozen=True)
class DmarcPolicy:
    #: the From: domain asked about
    domain: str
    #: its organizational domain
    org_domain: str
    #: the policy that applies to mail from ``domain``: none/quarantine/reject ("" if none)
    policy: str
    #: the record's ``sp=`` (or its ``p=`` when there is no ``sp=``)
    subdomain_policy: str
    #: a valid DMARC record was found (at ``record_domain``)
    found: bool
    #: where the record was found: ``domain`` or ``org_domain`` ("" if none)
    record_domain: str = ""
    #: the record as published
    record: str = ""
    #: DNS could not answer and ``on_failure`` was "mitigate"
    dns_error: bool = False

    @property
    def strict(self) -> bool:
        """The domain asks receivers to quarantine or reject mail that fails DMARC."""
        return self.dns_error or self.policy in STRICT_POLICIES


def parse_record(text: str) -> dict[str, str] | None:
    """The tags of a DMARC record (lower-case names), or None if it is not one."""
    if not _VERSION.match(text):
        return None
    tags: dict[str, str] = {}
    for part in text.split(";"):
        name, eq, value = part.partition("=")
        if eq:
            tags.setdefault(name.strip().lower(), value.strip())
    return tags


def _policy_tags(tags: dict[str, str]) -> tuple[str, str] | None:
    """(p, sp) of a record; RFC 7489 §6.6.3: a bad or missing p= with a valid rua= is
    p=none; without either the record is not usable."""
    p = tags.get("p", "").lower()
    if p not in POLICIES:
        if tags.get("rua"):
            p = "none"
        else:
            return None
    sp = tags.get("sp", "").lower()
    return p, sp if sp in POLICIES else p


def _records_at(resolver: Resolver, domain: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for text in resolver.txt(f"_dmarc.{domain}"):
        tags = parse_record(text)
        if tags is not None:
            out.append((text, tags))
    return out


def lookup_policy(
    resolver: Resolver, from_domain: str, on_failure: str = "tempfail"
) -> DmarcPolicy:
    """The DMARC policy that applies to mail whose From: domain is ``from_domain``."""
    domain = from_domain.strip().rstrip(".").lower()
    org = organizational_domain(domain) if domain else ""
    none = DmarcPolicy(domain, org, "", "", False)
    if not domain:
        return none
    try:
        for where in dict.fromkeys((domain, org)):
            records = _records_at(resolver, where)
            if not records:
                continue  # no record: try the organizational domain
            if len(records) > 1:
                return none  # RFC 7489: more than one record is no policy
            text, tags = records[0]
            pair = _policy_tags(tags)
            if pair is None:
                return none
            p, sp = pair
            return DmarcPolicy(domain, org, p if where == domain else sp, sp, True, where, text)
    except TryLater:
        if on_failure != "mitigate":
            raise
        return DmarcPolicy(domain, org, "", "", False, dns_error=True)
    return none


def should_mitigate(
    mlist: MailingList, policy: DmarcPolicy | bool | None, from_address: str
) -> bool:
    """Whether the list applies its ``dmarc_mitigate_action`` to this post.

    As Mailman: never on an anonymous list (its From: is the list already) nor with
    ``no_mitigation``; always for a From: in ``dmarc_addresses``; always with
    ``dmarc_mitigate_unconditionally`` when the action is munge_from or wrap_message (it
    does not extend reject/discard to every post); otherwise when the From: domain
    publishes p=reject or p=quarantine (or DNS failed in "mitigate" mode).

    ``policy`` None means it was not looked up; a bool is what a held post kept of it
    (whether it was strict)."""
    if isinstance(policy, bool):
        domain = from_address.rpartition("@")[2]
        policy = DmarcPolicy(domain, domain, "reject", "reject", True) if policy else None
    action = mlist.dmarc_mitigate_action.value
    if mlist.anonymous_list or action == NO_MITIGATION:
        return False
    if from_address and addresses.listed(from_address, mlist.dmarc_addresses):
        return True
    if mlist.dmarc_mitigate_unconditionally and action in _MUNGE_OR_WRAP:
        return True
    return policy is not None and policy.strict
