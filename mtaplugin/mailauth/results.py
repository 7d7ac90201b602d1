"""How a post was authenticated, as one :class:`AuthResults`, and the one reader of a
trusted verifier's Authentication-Results headers (RFC 8601).

:func:`read_trusted` believes the results of an authserv-id the site trusts
(``authentication.trusted_authserv_ids``: the MTA's own OpenDKIM/OpenDMARC, say) only in
the **topmost** headers: those above the first ``Received:`` field that the receiving MTA
did not add itself (:func:`topmost`).  A header further down was in the message before
its last hop (a sender's forgery, or an old result): it is never believed, whatever its
authserv-id.  Every other header, and any it cannot parse, is ignored.  A client that
talks to the MTA directly can still put a header on top: the MTA must remove incoming
Authentication-Results that carry a trusted authserv-id (RFC 8601 §5; docs/security.md
shows how), or the site sets ``verify_incoming``, which never reads them.

:attr:`AuthResults.signals` says what backs the From: address in
:class:`~mtaplugin.mailauth.identity.SenderIdentity`'s words, whether the results came from
a trusted header or from our own checks (:mod:`mtaplugin.mailauth.verify`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

import authres
import authres.arc
import authres.dmarc

from mtaplugin.mailauth.dmarc import aligned
from mtaplugin.vocabulary.envelope import Post

log = logging.getLogger(__name__)


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
        """What backs the From: address: ``dkim:<d>`` and ``spf:<domain>`` for passes
        aligned (relaxed) with the From: domain, ``dmarc:<from-domain>`` for a DMARC pass."""
        out: list[str] = []
        for d in self.dkim:
            if d.result == "pass" and aligned(d.domain, self.from_domain):
                out.append(f"dkim:{d.domain}")
        if self.spf == "pass" and aligned(self.spf_domain, self.from_domain):
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


# --- the one reader of trusted Authentication-Results ----------------------------------------
def topmost(post: Post, local_received: int = 0) -> list[str]:
    """The values of the Authentication-Results fields above the first ``Received:`` field
    that the receiving MTA did not add (it added the first ``local_received`` ones; see
    :attr:`mtaplugin.vocabulary.envelope.Envelope.local_received`), in order."""
    found: list[str] = []
    received = 0
    for name, value in post.headers.raw_items():
        key = name.lower()
        if key == "received":
            received += 1
            if received > local_received:
                break
        elif key == "authentication-results":
            found.append(str(value))
    return found


def _trusted(
    post: Post, trusted: frozenset[str], local_received: int
) -> Iterator[tuple[str, authres.core.AuthenticationResult]]:
    """(authserv-id, result) of every result in the topmost Authentication-Results headers
    whose authserv-id is in ``trusted``; unparsable headers are skipped."""
    for value in topmost(post, local_received):
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


def _value(result: authres.core.AuthenticationResult, ptype: str, name: str) -> str:
    """The value of a result's ``ptype.name`` property ("" when it has none)."""
    for prop in result.properties:
        if prop.type == ptype and prop.name == name:
            return str(prop.value or "")
    return ""


def read_trusted(
    post: Post, from_domain: str, trusted: frozenset[str], local_received: int = 0
) -> AuthResults | None:
    """The results a trusted verifier recorded in the topmost headers (:func:`topmost`),
    or None if it recorded none there.

    DKIM: every result (``header.d``, else the domain of ``header.i``).  SPF: the MAIL FROM
    result (``smtp.mailfrom``) if there is one, else the HELO result, as DMARC judges
    (RFC 7489 §3.1.2).  DMARC: the result for this From: domain (``header.from`` that
    domain, or absent).  ``trusted``: lower-case authserv-ids."""
    found = list(_trusted(post, trusted, local_received))
    if not found:
        return None
    from_domain = from_domain.lower()
    dkim_results: list[DkimResult] = []
    spf: tuple[str, str, str, str] | None = None
    dmarc, dmarc_policy, arc = "none", "", "none"
    others: list[str] = []
    for _authserv_id, result in found:
        method = str(result.method).lower()
        value = str(result.result).lower()
        if method == "dkim":
            d = _value(result, "header", "d") or _value(result, "header", "i").rpartition("@")[2]
            dkim_results.append(DkimResult(value, d.lower(), _value(result, "header", "s")))
        elif method == "spf":
            mailfrom = _value(result, "smtp", "mailfrom")
            if mailfrom:
                if spf is None or spf[2] != "mailfrom":
                    spf = (value, mailfrom.rpartition("@")[2].lower(), "mailfrom", mailfrom)
            elif spf is None:
                helo = _value(result, "smtp", "helo")
                spf = (value, helo.lower(), "helo", helo)
        elif method == "dmarc":
            if _value(result, "header", "from").lower() in ("", from_domain):
                dmarc = value
                dmarc_policy = _value(result, "policy", "dmarc").lower()
        elif method == "arc":
            arc = value
        elif method != "none":
            others.append(str(result))
    spf_value, spf_domain, spf_scope, spf_identity = spf or ("none", "", "mailfrom", "")
    return AuthResults(
        from_domain=from_domain,
        dkim=tuple(dkim_results),
        spf=spf_value,
        spf_domain=spf_domain,
        spf_scope=spf_scope,
        spf_identity=spf_identity,
        dmarc=dmarc,
        dmarc_policy=dmarc_policy,
        arc=arc,
        source=found[0][0],
        others=tuple(others),
    )
