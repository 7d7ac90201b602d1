"""Who the post is from, and what backs that.

Membership is decided from the From: address alone.  Whether that address is *authentic*
is a separate question, answered here from signals the receiving MTA already computed:

- ``Authentication-Results`` headers (RFC 8601, parsed with :mod:`authres`) whose
  authserv-id is one the site trusts (``authentication.trusted_authserv_ids``): a DKIM
  pass whose ``header.d`` is aligned with the From: domain, an SPF pass whose
  ``smtp.mailfrom`` is aligned with it, or a DMARC pass for it.  Alignment is relaxed
  (RFC 7489 §3.1): the same organizational domain, found with :mod:`publicsuffixlist`.
- SMTP AUTH: the client logged in (the MTA's ``{auth_authen}`` macro) as the From: address,
  or as anyone when ``authentication.trust_sasl_senders`` says the MTA enforces sender
  login maps (Postfix ``reject_sender_login_mismatch``).

The MTA's verifier must remove Authentication-Results headers that carry its own
authserv-id from incoming mail (RFC 8601 §5), or a sender could forge them.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import authres
from publicsuffixlist import PublicSuffixList

from mtaplugin.posting import addresses
from mtaplugin.posting.envelope import Envelope, Post

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AuthenticationPolicy:
    trusted_authserv_ids: frozenset[str] = frozenset()
    trust_sasl_senders: bool = False


@dataclass(frozen=True)
class SenderIdentity:
    address: str
    #: what backs the From: address, e.g. ("dkim:example.org", "spf:example.org")
    signals: tuple[str, ...] = ()

    @property
    def authenticated(self) -> bool:
        return bool(self.signals)


@functools.cache
def _psl() -> PublicSuffixList:
    return PublicSuffixList()


def organizational_domain(domain: str) -> str:
    domain = domain.lower().rstrip(".")
    return _psl().privatesuffix(domain) or domain


def aligned(domain: str, from_domain: str) -> bool:
    """Relaxed alignment: the same organizational domain."""
    if not domain or not from_domain:
        return False
    return organizational_domain(domain) == organizational_domain(from_domain)


def _prop(result: authres.core.AuthenticationResult, ptype: str, name: str) -> str:
    for prop in result.properties:
        if prop.type == ptype and prop.name == name:
            value = str(prop.value or "")
            return value.rpartition("@")[2].lower() if "@" in value else value.lower()
    return ""


def trusted_results(
    post: Post, trusted: frozenset[str]
) -> Iterator[tuple[str, authres.core.AuthenticationResult]]:
    """(authserv-id, result) of every result in the Authentication-Results headers whose
    authserv-id is in ``trusted``; unparsable headers are skipped."""
    for value in post.get_all("Authentication-Results"):
        try:
            header = authres.AuthenticationResultsHeader.parse(
                "Authentication-Results: " + " ".join(value.split())
            )
        except Exception as exc:  # authres raises several types on bad input
            log.info("unparsable Authentication-Results ignored: %s", exc)
            continue
        authserv_id = str(header.authserv_id).lower()
        if authserv_id not in trusted:
            continue
        for result in header.results:
            yield authserv_id, result


def _from_auth_results(post: Post, from_domain: str, trusted: frozenset[str]) -> list[str]:
    signals: list[str] = []
    for _authserv_id, result in trusted_results(post, trusted):
        if str(result.result).lower() != "pass":
            continue
        method = str(result.method).lower()
        if method == "dkim":
            d = _prop(result, "header", "d") or _prop(result, "header", "i")
            if aligned(d, from_domain):
                signals.append(f"dkim:{d}")
        elif method == "spf":
            d = _prop(result, "smtp", "mailfrom") or _prop(result, "smtp", "helo")
            if aligned(d, from_domain):
                signals.append(f"spf:{d}")
        elif method == "dmarc":
            d = _prop(result, "header", "from")
            if d == from_domain:
                signals.append(f"dmarc:{d}")
    return signals


def identify(
    post: Post,
    envelope: Envelope,
    policy: AuthenticationPolicy,
    verified: Iterable[str] = (),
) -> SenderIdentity:
    """Who the post is from and what backs it.  ``verified``: signals of our own checks
    (:attr:`mtaplugin.mailauth.verify.AuthResults.signals`), added to those of trusted headers."""
    sender = post.from_address
    if not sender:
        return SenderIdentity("")
    from_domain = addresses.split(sender)[1]
    signals: list[str] = list(verified)
    if policy.trusted_authserv_ids and post.get("Authentication-Results"):
        signals.extend(_from_auth_results(post, from_domain, policy.trusted_authserv_ids))
    user = envelope.auth_user.strip().lower()
    if user and (user == sender or policy.trust_sasl_senders):
        signals.append(f"sasl:{user}")
    return SenderIdentity(sender, tuple(dict.fromkeys(signals)))
