"""How an incoming post is authenticated here: DKIM, SPF, DMARC and ARC, recorded as one
:class:`AuthResults`.

:func:`check` runs the checks here, through the shared
:class:`~mtaplugin.mailauth.resolver.Resolver`: every DKIM-Signature (dkimpy, at most
:data:`MAX_SIGNATURES`), SPF on the envelope's client address, MAIL FROM and HELO (pyspf),
the ARC chain (dkimpy), and DMARC: the From: domain's policy
(:func:`mtaplugin.mailauth.dmarc.lookup_policy`) with a pass when an SPF or DKIM pass is
aligned with it (``adkim``/``aspf``: relaxed = same organizational domain, strict = same
domain).  Authentication-Results headers in the message are never read here: with
``authentication.verify_incoming`` on, a header the sender wrote cannot take the place of
these checks (a trusted verifier's headers are read, instead of checking, only when it is
off: :func:`mtaplugin.mailauth.results.read_trusted`).

A DNS failure during a check gives that method ``temperror``: the post is not refused
for it here (the DMARC mitigation lookup in the engine decides about 4xx).

The result (:class:`~mtaplugin.mailauth.results.AuthResults`) gives the
Authentication-Results header value to record (the ARC seal records it), and the signals
that :func:`mtaplugin.mailauth.identity.identify` uses.
"""

from __future__ import annotations

import dataclasses
import logging

import dkim
from dkim.util import InvalidTagValueList, parse_tag_value

from mtaplugin.errors import TryLater
from mtaplugin.mailauth.dmarc import DmarcPolicy, aligned, lookup_policy, parse_record
from mtaplugin.mailauth.resolver import Resolver, spf_check
from mtaplugin.mailauth.results import AuthResults, DkimResult
from mtaplugin.vocabulary import addresses
from mtaplugin.vocabulary.envelope import Envelope, Post

log = logging.getLogger(__name__)
_DKIMPY_LOG = logging.getLogger(__name__ + ".dkimpy")

#: DKIM signatures verified per post, at most (each may cost a DNS lookup)
MAX_SIGNATURES = 5
_ARC_HEADERS = ("ARC-Seal", "ARC-Message-Signature", "ARC-Authentication-Results")


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
        d.result == "pass" and aligned(d.domain, from_domain, strict_dkim) for d in dkim_results
    )
    spf_ok = results.spf == "pass" and aligned(results.spf_domain, from_domain, strict_spf)
    return ("pass" if dkim_ok or spf_ok else "fail"), policy.policy


def check(
    raw: bytes,
    envelope: Envelope,
    resolver: Resolver,
    policy: DmarcPolicy | None = None,
) -> AuthResults:
    """Authenticate the post here (never from its Authentication-Results headers)."""
    post = Post(raw)
    from_domain = addresses.split(post.from_address)[1] if post.from_address else ""
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
    return dataclasses.replace(results, dmarc=dmarc, dmarc_policy=dmarc_policy)
