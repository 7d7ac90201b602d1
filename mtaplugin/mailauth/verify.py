"""How an incoming post is authenticated: DKIM, SPF, DMARC and ARC, checked here or
believed from a trusted verifier, recorded as one :class:`AuthResults`.

:func:`check` works in one of two ways:

- the post carries Authentication-Results headers of an authserv-id the site trusts
  (``authentication.trusted_authserv_ids``: the MTA's own OpenDKIM/OpenDMARC, say): their
  results are taken as they are (parsed by :func:`mtaplugin.mailauth.identity.trusted_results`);
- otherwise the checks run here, through the shared :class:`~mtaplugin.mailauth.resolver.Resolver`:
  every DKIM-Signature (dkimpy, at most :data:`MAX_SIGNATURES`), SPF on the envelope's
  client address, MAIL FROM and HELO (pyspf), the ARC chain (dkimpy), and DMARC: the From:
  domain's policy (:func:`mtaplugin.mailauth.dmarc.lookup_policy`) with a pass when an SPF or DKIM
  pass is aligned with it (``adkim``/``aspf``: relaxed = same organizational domain,
  strict = same domain).

A DNS failure during a check gives that method ``temperror``: the post is not refused
for it here (the DMARC mitigation lookup in the engine decides about 4xx).

The result gives the Authentication-Results header value to record (:meth:`header`,
built with :mod:`authres`; the ARC seal records it), and the signals that
:func:`mtaplugin.mailauth.identity.identify` uses (:attr:`AuthResults.signals`, or
:func:`identity_from_results`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

import authres
import authres.arc
import authres.dmarc
import dkim
from dkim.util import InvalidTagValueList, parse_tag_value

from mtaplugin.errors import TryLater
from mtaplugin.mailauth.dmarc import DmarcPolicy, lookup_policy, parse_record
from mtaplugin.mailauth.identity import (
    AuthenticationPolicy,
    SenderIdentity,
    identify,
    organizational_domain,
    trusted_results,
)
from mtaplugin.mailauth.resolver import Resolver, spf_check
from mtaplugin.posting import addresses
from mtaplugin.posting.envelope import Envelope, Post

log = logging.getLogger(__name__)
_DKIMPY_LOG = logging.getLogger(__name__ + ".dkimpy")

#: DKIM signatures verified per post, at most (each may cost a DNS lookup)
MAX_SIGNATURES = 5
_ARC_HEADERS = ("ARC-Seal", "ARC-Message-Signature", "ARC-Authentication-Results")


@dataclass(frozen=True)
class DkimResult:
    #: pass, fail, neutral, policy, temperror, permerror
    result: str
    #: d= of the signature
    domain: str = ""
    #: s= of the signature
    selector: str = ""
    reason: str = ""


@dataclass(frozen=True)
class AuthResults:
    """How the post was authenticated when it came in."""

    #: the domain of the first From: address
    from_domain: str = ""
    dkim: tuple[DkimResult, ...] = ()
    #: pass, fail, softfail, neutral, none, temperror, permerror
    spf: str = "none"
    #: the domain SPF checked: MAIL FROM's, or HELO's for the null sender
    spf_domain: str = ""
    #: "mailfrom" or "helo"
    spf_scope: str = "mailfrom"
    #: the address or name SPF checked, as recorded (smtp.mailfrom / smtp.helo)
    spf_identity: str = ""
    #: pass, fail, none, temperror, permerror
    dmarc: str = "none"
    #: the policy of the From: domain (none, quarantine, reject; "" if none is published)
    dmarc_policy: str = ""
    #: the ARC chain as received: pass, fail, none
    arc: str = "none"
    #: "" when the checks ran here, else the trusted authserv-id the results came from
    source: str = ""
    #: results of other methods seen in trusted headers, as "method=result ..." text
    others: tuple[str, ...] = field(default=())

    def header(self, authserv_id: str) -> str:
        """The value of an Authentication-Results header (``authserv-id; dkim=...``)."""
        results: list[authres.core.AuthenticationResult] = []
        for d in self.dkim:
            results.append(
                authres.DKIMAuthenticationResult(
                    result=d.result,
                    reason=d.reason or None,
                    header_d=d.domain or None,
                    header_s=d.selector or None,
                )
            )
        if self.spf != "none" or self.spf_identity:
            if self.spf_scope == "helo":
                results.append(
                    authres.SPFAuthenticationResult(
                        result=self.spf, smtp_helo=self.spf_identity or None
                    )
                )
            else:
                results.append(
                    authres.SPFAuthenticationResult(
                        result=self.spf, smtp_mailfrom=self.spf_identity or None
                    )
                )
        if self.from_domain:
            results.append(
                authres.dmarc.DMARCAuthenticationResult(
                    result=self.dmarc,
                    header_from=self.from_domain,
                    policy=self.dmarc_policy or None,
                )
            )
        if self.arc != "none":
            results.append(authres.arc.ARCAuthenticationResult(result=self.arc))
        context = authres.all_features()
        header = context.header(authserv_id=authserv_id, results=results)
        value: str = header.header_value()
        for other in self.others:
            value += "; " + other
        return value

    @property
    def signals(self) -> tuple[str, ...]:
        """What backs the From: address, in :class:`~mtaplugin.mailauth.identity.SenderIdentity`'s
        words: ``dkim:<d>`` and ``spf:<domain>`` for passes aligned (relaxed) with the
        From: domain, ``dmarc:<from-domain>`` for a DMARC pass."""
        out: list[str] = []
        for d in self.dkim:
            if d.result == "pass" and _aligned(d.domain, self.from_domain, strict=False):
                out.append(f"dkim:{d.domain}")
        if self.spf == "pass" and _aligned(self.spf_domain, self.from_domain, strict=False):
            out.append(f"spf:{self.spf_domain}")
        if self.dmarc == "pass" and self.from_domain:
            out.append(f"dmarc:{self.from_domain}")
        return tuple(dict.fromkeys(out))

    @property
    def temporary_failure(self) -> bool:
        """A check could not be made because DNS did not answer."""
        return "temperror" in (self.spf, self.dmarc, self.arc) or any(
            d.result == "temperror" for d in self.dkim
        )


def _aligned(domain: str, from_domain: str, strict: bool) -> bool:
    domain, from_domain = domain.lower().rstrip("."), from_domain.lower().rstrip(".")
    if not domain or not from_domain:
        return False
    if strict:
        return domain == from_domain
    return organizational_domain(domain) == organizational_domain(from_domain)


# --- the checks ----------------------------------------------------------------------------
def _signature_tags(raw_value: bytes) -> dict[bytes, bytes]:
    try:
        tags: dict[bytes, bytes] = parse_tag_value(b"".join(raw_value.split()))
    except (InvalidTagValueList, ValueError):
        return {}
    return tags


def check_dkim(raw: bytes, resolver: Resolver) -> tuple[DkimResult, ...]:
    verifier = dkim.DKIM(
        raw, logger=_DKIMPY_LOG, minkey=1024, timeout=max(1, int(resolver.timeout))
    )
    signatures = [v for n, v in verifier.headers if n.lower() == b"dkim-signature"]
    out: list[DkimResult] = []
    for idx, value in enumerate(signatures[:MAX_SIGNATURES]):
        tags = _signature_tags(value)
        d = tags.get(b"d", b"").decode("ascii", "replace").lower()
        s = tags.get(b"s", b"").decode("ascii", "replace")
        try:
            if d and s and not resolver.dkim_dnsfunc(f"{s}._domainkey.{d}.".encode()):
                out.append(DkimResult("permerror", d, s, "no key"))
                continue
            ok = verifier.verify(idx=idx, dnsfunc=resolver.dkim_dnsfunc)
        except TryLater as exc:
            out.append(DkimResult("temperror", d, s, str(exc)))
            continue
        except dkim.KeyFormatError as exc:
            out.append(DkimResult("permerror", d, s, str(exc)))
            continue
        except dkim.DKIMException as exc:
            out.append(DkimResult("fail", d, s, str(exc)))
            continue
        out.append(DkimResult("pass" if ok else "fail", d, s))
    return tuple(out)


def check_arc(raw: bytes, post: Post, resolver: Resolver) -> str:
    if not any(post.get(name) for name in _ARC_HEADERS):
        return "none"
    try:
        cv, _sets, reason = dkim.arc_verify(raw, dnsfunc=resolver.dkim_dnsfunc)
    except TryLater:
        return "temperror"
    if cv == dkim.CV_Pass:
        return "pass"
    log.info("ARC chain failed: %s", reason)
    return "fail"


def _dmarc_result(
    results: AuthResults, policy: DmarcPolicy | None, dkim_results: tuple[DkimResult, ...]
) -> tuple[str, str]:
    if policy is None:
        return "temperror", ""
    if not policy.found:
        return "none", ""
    tags = parse_record(policy.record) or {}
    strict_dkim = tags.get("adkim", "r").lower() == "s"
    strict_spf = tags.get("aspf", "r").lower() == "s"
    from_domain = results.from_domain
    dkim_ok = any(
        d.result == "pass" and _aligned(d.domain, from_domain, strict_dkim) for d in dkim_results
    )
    spf_ok = results.spf == "pass" and _aligned(results.spf_domain, from_domain, strict_spf)
    return ("pass" if dkim_ok or spf_ok else "fail"), policy.policy


def check(
    raw: bytes,
    envelope: Envelope,
    resolver: Resolver,
    trusted_authserv_ids: Iterable[str] = (),
    policy: DmarcPolicy | None = None,
) -> AuthResults:
    """Authenticate the post: from trusted headers when there are some, else here."""
    post = Post(raw)
    from_domain = addresses.split(post.from_address)[1] if post.from_address else ""
    trusted = frozenset(a.lower() for a in trusted_authserv_ids)
    if trusted:
        believed = from_trusted_headers(post, from_domain, trusted)
        if believed is not None:
            return believed
    dkim_results = check_dkim(raw, resolver)
    mail_from = envelope.mail_from.strip().strip("<>")
    if mail_from:
        spf_scope, spf_identity = "mailfrom", mail_from
        spf_domain = addresses.split(mail_from)[1] if "@" in mail_from else mail_from
    else:
        spf_scope, spf_identity, spf_domain = "helo", envelope.helo, envelope.helo
    spf = "none"
    if envelope.client_address and spf_domain:
        spf, _explanation = spf_check(resolver, envelope.client_address, mail_from, envelope.helo)
    results = AuthResults(
        from_domain=from_domain,
        dkim=dkim_results,
        spf=spf,
        spf_domain=spf_domain.lower(),
        spf_scope=spf_scope,
        spf_identity=spf_identity,
        arc=check_arc(raw, post, resolver),
    )
    if not from_domain:
        return results
    if policy is None:
        try:
            policy = lookup_policy(resolver, from_domain)
        except TryLater as exc:
            log.info("DMARC policy of %s: %s", from_domain, exc)
            policy = None
    dmarc, dmarc_policy = _dmarc_result(results, policy, dkim_results)
    return _replace(results, dmarc=dmarc, dmarc_policy=dmarc_policy)


def _replace(results: AuthResults, **changes: object) -> AuthResults:
    import dataclasses

    return dataclasses.replace(results, **changes)  # type: ignore[arg-type]


def _value(result: authres.core.AuthenticationResult, ptype: str, name: str) -> str:
    for prop in result.properties:
        if prop.type == ptype and prop.name == name:
            return str(prop.value or "")
    return ""


def from_trusted_headers(
    post: Post, from_domain: str, trusted: frozenset[str]
) -> AuthResults | None:
    """The results a trusted verifier recorded, or None if it recorded none."""
    found = list(trusted_results(post, trusted))
    if not found:
        return None
    dkim_results: list[DkimResult] = []
    spf = ("none", "", "mailfrom", "")
    dmarc, dmarc_policy, arc = "none", "", "none"
    others: list[str] = []
    source = found[0][0]
    for _authserv_id, result in found:
        method = str(result.method).lower()
        value = str(result.result).lower()
        if method == "dkim":
            d = _value(result, "header", "d") or _value(result, "header", "i").rpartition("@")[2]
            dkim_results.append(DkimResult(value, d.lower(), _value(result, "header", "s")))
        elif method == "spf":
            mailfrom = _value(result, "smtp", "mailfrom")
            helo = _value(result, "smtp", "helo")
            if mailfrom:
                domain = mailfrom.rpartition("@")[2]
                spf = (value, domain.lower(), "mailfrom", mailfrom)
            else:
                spf = (value, helo.lower(), "helo", helo)
        elif method == "dmarc":
            if _value(result, "header", "from").lower() in ("", from_domain):
                dmarc = value
                dmarc_policy = _value(result, "policy", "dmarc").lower()
        elif method == "arc":
            arc = value
        elif method != "none":
            others.append(str(result))
    return AuthResults(
        from_domain=from_domain,
        dkim=tuple(dkim_results),
        spf=spf[0],
        spf_domain=spf[1],
        spf_scope=spf[2],
        spf_identity=spf[3],
        dmarc=dmarc,
        dmarc_policy=dmarc_policy,
        arc=arc,
        source=source,
        others=tuple(others),
    )


def identity_from_results(
    post: Post, envelope: Envelope, policy: AuthenticationPolicy, results: AuthResults
) -> SenderIdentity:
    """The sender identity, backed by these results (and SMTP AUTH, as identify does)."""
    return identify(post, envelope, policy, verified=results.signals)
