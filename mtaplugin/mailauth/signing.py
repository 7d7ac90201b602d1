"""DKIM signing and ARC sealing of what the lists send, by the list domain.

Each domain has one signing key (:class:`~mtaplugin.model.DkimKey`) per algorithm: a
selector, a private key (RSA 2048 by default, or Ed25519) and the header fields to sign
(and during a rollover its replacement, waiting for DNS).  A domain with both signs each
copy twice (RFC 8463); only the RSA key ARC-seals.
``mtaplugin dkim keygen DOMAIN`` makes it and prints the TXT record to publish; it signs
once ``mtaplugin dkim check`` (or its hourly job) has seen the record in DNS.

- :func:`dkim_sign`: relaxed/relaxed; every occurrence of each configured header field is
  signed, and From: once more than it occurs (oversigned: nobody can add a second From:).
- :func:`arc_seal`: the next ARC set (RFC 8617), on the copy as it leaves, after the
  decorations.  It records the authentication results of the post as it came in (an
  Authentication-Results value of our authserv-id, see :mod:`mtaplugin.mailauth.verify`), whose
  ``arc=`` result gives the chain validation status ``cv=``.  ARC allows only rsa-sha256:
  a domain with an Ed25519 key gets DKIM signatures but no ARC seal.

The signatures are written by :mod:`mtaplugin.mailauth.sealer` (:func:`seal_and_sign`: the
ARC set and the DKIM signatures in one pass, the body hashed once, RSA in OpenSSL).  dkimpy
makes only a further ARC set on a chain that failed or is incomplete; for that path, dkimpy
doing RSA in pure Python (about 10 ms per 2048-bit signature), :func:`install_openssl_rsa`
gives dkimpy's signing function the same RSASSA-PKCS1-v1_5 operation from ``cryptography``
(OpenSSL), whose output is the same bytes (the scheme is deterministic).  Importing this
module changes nothing: the composition root calls
:func:`mtaplugin.mailauth.service.install`, which calls it.
"""

from __future__ import annotations

import base64
import logging
import re
from dataclasses import dataclass, replace

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.clock import system_clock
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.mailauth import sealer
from mtaplugin.mailauth.keys import KEYS
from mtaplugin.model import DkimKey, Domain
from mtaplugin.vocabulary.header_block import header_end, strip_headers

log = logging.getLogger(__name__)

RSA = "rsa"
ED25519 = "ed25519"
_SELECTOR = re.compile(
    r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$"
)
#: header fields that must never be signed (RFC 6376 §5.4 and ARC's own)
_NEVER_SIGN = frozenset(x.decode() for x in dkim.DKIM.SHOULD_NOT) | {
    "authentication-results",
    "arc-seal",
    "arc-message-signature",
    "arc-authentication-results",
}
#: signed once more than they occur, so that none can be added
OVERSIGNED = frozenset({"from"})


@dataclass(frozen=True)
class SigningKey:
    domain: str
    selector: str
    #: what dkimpy takes: PKCS#1 PEM for RSA, the base64 32-octet seed for Ed25519
    private_key: bytes
    headers: tuple[str, ...]
    algorithm: str = RSA
    #: further keys that sign beside this one (an Ed25519 key beside the RSA key)
    also: tuple[SigningKey, ...] = ()


# --- keys ----------------------------------------------------------------------------------
def generate_private_key(algorithm: str = RSA, bits: int = 2048) -> str:
    """A new private key as PEM text."""
    if algorithm == RSA:
        if bits < 1024 or bits > 8192:
            raise InvalidInput(
                "bits", _("expected 1024 to 8192 bits, got {bits}").format(bits=bits)
            )
        key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ).decode("ascii")
    if algorithm == ED25519:
        return (
            ed25519.Ed25519PrivateKey.generate()
            .private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            .decode("ascii")
        )
    raise InvalidInput(
        "algorithm", _("expected rsa or ed25519, got {value!r}").format(value=algorithm)
    )


def _load(pem: str) -> rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey:
    key = serialization.load_pem_private_key(pem.encode("ascii"), password=None)
    if not isinstance(key, rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey):
        raise InvalidInput("private_key", _("only RSA and Ed25519 keys can sign"))
    return key


def key_algorithm(pem: str) -> str:
    return ED25519 if isinstance(_load(pem), ed25519.Ed25519PrivateKey) else RSA


def public_key_b64(pem: str) -> str:
    """The p= value: the SubjectPublicKeyInfo for RSA, the raw 32 octets for Ed25519."""
    key = _load(pem)
    if isinstance(key, ed25519.Ed25519PrivateKey):
        raw = key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
    else:
        raw = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    return base64.b64encode(raw).decode("ascii")


def txt_value(pem: str) -> str:
    """The TXT record to publish at ``SELECTOR._domainkey.DOMAIN``."""
    return f"v=DKIM1; k={key_algorithm(pem)}; p={public_key_b64(pem)}"


def txt_record(domain: str, selector: str, pem: str) -> str:
    """A zone-file line, the value split into quoted strings of at most 255 characters."""
    value = txt_value(pem)
    chunks = " ".join(f'"{value[i : i + 255]}"' for i in range(0, len(value), 255))
    return f"{selector}._domainkey.{domain}. IN TXT ( {chunks} )"


def check_selector(selector: str) -> str:
    value = selector.strip().lower()
    if not _SELECTOR.match(value):
        raise InvalidInput(
            "selector",
            _("expected DNS labels (letters, digits, hyphens), got {value!r}").format(
                value=selector
            ),
        )
    return value


def _signing_key(domain: str, row: DkimKey) -> SigningKey:
    # Parsed once per process (an RSA PEM parse costs ~30 ms, ten signatures): the row is
    # read again each KEY_TTL, and the sealer signs with the same parsed key.
    pem = row.private_key.encode("ascii")
    key = KEYS.get(("pem", pem), lambda: _load(row.private_key))
    if isinstance(key, rsa.RSAPrivateKey):
        KEYS.get(sealer.key_ident(sealer.RSA_SHA256, pem), lambda: key)
    headers = tuple(h.strip().lower() for h in row.signed_headers.split(":") if h.strip())
    if isinstance(key, ed25519.Ed25519PrivateKey):
        seed = key.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        return SigningKey(domain, row.selector, base64.b64encode(seed), headers, ED25519)
    return SigningKey(domain, row.selector, pem, headers, RSA)


def key_for(session: Session, mail_host: str) -> SigningKey | None:
    """The signing key of the domain ``mail_host`` (None: that domain does not sign, or
    its key waits for DNS to publish it): its RSA key, with its Ed25519 key in ``also``
    when it has both (RFC 8463); the newest active key of each algorithm."""
    host = mail_host.strip().lower()
    rows = session.scalars(
        select(DkimKey)
        .join(Domain, DkimKey.domain_id == Domain.id)
        .where(Domain.mail_host == host, DkimKey.activated_at.is_not(None))
        .order_by(DkimKey.activated_at.desc(), DkimKey.id.desc())
    ).all()
    # the newest active key of each algorithm; RSA first (it is the one that ARC-seals)
    newest: dict[str, SigningKey] = {}
    for row in rows:
        key = _signing_key(host, row)
        newest.setdefault(key.algorithm, key)
    if not newest:
        return None
    first = newest.pop(RSA, None) or newest.pop(ED25519)
    others = tuple(newest.values())
    return first if not others else replace(first, also=others)


# --- signing -------------------------------------------------------------------------------
def _linesep(raw: bytes) -> bytes:
    head = raw[: header_end(raw)]
    return b"\r\n" if b"\r\n" in head or not head else b"\n"


def _header_names(raw: bytes) -> list[str]:
    names = []
    for line in raw[: header_end(raw)].splitlines():
        if line[:1] in (b" ", b"\t") or b":" not in line:
            continue
        names.append(line.split(b":", 1)[0].strip().decode("ascii", "replace").lower())
    return names


def include_headers(raw: bytes, headers: tuple[str, ...]) -> list[bytes]:
    """The h= list: each configured field as often as it occurs, oversigned ones once more."""
    present = _header_names(raw)
    out: list[bytes] = []
    for name in dict.fromkeys(h.lower() for h in headers):
        if name in _NEVER_SIGN:
            continue
        count = present.count(name) + (1 if name in OVERSIGNED else 0)
        out.extend([name.encode("ascii")] * count)
    if b"from" not in out:
        out.extend([b"from"] * (present.count("from") + 1))
    return out


def _signer(key: SigningKey) -> sealer.Signer:
    algorithm = sealer.ED25519_SHA256 if key.algorithm == ED25519 else sealer.RSA_SHA256
    return sealer.Signer(
        key.domain.encode("ascii"), key.selector.encode("ascii"), key.private_key, algorithm
    )


def _now() -> int:
    return int(system_clock().timestamp())


def dkim_sign(
    raw: bytes, key: SigningKey, *, also: tuple[SigningKey, ...] = (), timestamp: int | None = None
) -> bytes:
    """``raw`` with a DKIM-Signature by ``key.domain`` prepended (and one per key in
    ``also``: an Ed25519 key beside the RSA one, RFC 8463)."""
    signed = sealer.sign_copy(
        raw,
        [_signer(k) for k in (key, *key.also, *also)],
        None,
        include_headers(raw, key.headers),
        _now() if timestamp is None else timestamp,
        _linesep(raw),
    )
    assert signed is not None  # only an ARC set can be left to dkimpy
    return signed


def _has_arc_set(raw: bytes) -> bool:
    return any(n in ("arc-seal", "arc-message-signature") for n in _header_names(raw))


def _authserv_id(results: str) -> str:
    return results.split(";", 1)[0].strip().split()[0] if results.strip() else ""


def _with_arc_result(results: str, chain_present: bool) -> str:
    """``results`` with the ``arc=`` result dkimpy turns into ``cv=``: none for a first
    seal; for a further seal the result recorded on receipt when it is pass or fail, and
    fail when it is anything else or missing (RFC 8617 §5.2: a chain that could not be
    validated is not vouched for)."""
    parts = [p.strip() for p in results.split(";")]
    head, rest = parts[0], [p for p in parts[1:] if p and p.lower() != "none"]
    recorded = [p for p in rest if p.lower().startswith("arc=")]
    rest = [p for p in rest if not p.lower().startswith("arc=")]
    if chain_present:
        value = recorded[0][4:].split()[0].lower() if len(recorded) == 1 else ""
        if value not in ("pass", "fail"):
            log.warning("ARC chain not validated on receipt (%r): sealing with cv=fail", value)
            rest.append("arc=fail (not validated on receipt)")
        else:
            rest.append(recorded[0])
    return "; ".join([head, *(rest or ["none"])])


def _arc_message(raw: bytes, authserv_id: str, results: str) -> tuple[bytes, str, bytes]:
    """(the copy with our Authentication-Results, that value, the copy without forged ones)."""
    linesep = _linesep(raw)
    authserv_id = authserv_id.strip().lower()  # authres lower-cases it when parsing
    rest = results.split(";", 1)[1].strip() if ";" in results else ""
    results = f"{authserv_id}; {rest or 'none'}"
    results = _with_arc_result(" ".join(results.split()), _has_arc_set(raw))
    body = _strip_own_results(raw, authserv_id)
    ar_line = b"Authentication-Results: " + results.encode("utf-8") + linesep
    return ar_line + body, results, body


def _cv(results: str) -> bytes:
    """The chain validation status ``_with_arc_result`` put in ``results``."""
    for part in results.split(";")[1:]:
        part = part.strip().lower()
        if part.startswith("arc="):
            return part[4:].split()[0].encode("ascii")
    return b"none"


def arc_seal(
    raw: bytes, key: SigningKey, authserv_id: str, results: str, *, timestamp: int | None = None
) -> bytes:
    """``raw`` with the next ARC set and our Authentication-Results prepended.

    ``results`` is an Authentication-Results value (``authserv-id; dkim=pass ...``, the
    authserv-id being ``authserv_id``) recording how the post was authenticated when it
    came in; it includes ``arc=pass|fail|none`` when the post came with an ARC chain."""
    return seal_and_sign(raw, key, authserv_id, results, dkim=False, timestamp=timestamp)


def seal_and_sign(
    raw: bytes,
    key: SigningKey,
    authserv_id: str,
    results: str,
    *,
    dkim: bool = True,
    also: tuple[SigningKey, ...] = (),
    timestamp: int | None = None,
) -> bytes:
    """``raw`` with the ARC set (as :func:`arc_seal`) and then the DKIM signatures (as
    :func:`dkim_sign`, when ``dkim``), the body hashed and the signed header fields
    canonicalized once for all of them (:mod:`~mtaplugin.mailauth.sealer`)."""
    when = _now() if timestamp is None else timestamp
    signers = [_signer(k) for k in (key, *key.also, *also)] if dkim else []
    if key.algorithm != RSA:
        log.info("no ARC seal for %s: ARC needs an RSA key", key.domain)
        return dkim_sign(raw, key, also=also, timestamp=when) if dkim else raw
    message, results, body = _arc_message(raw, authserv_id, results)
    names = include_headers(body, key.headers)
    request = sealer.ArcRequest(results, _cv(results))
    signed = sealer.sign_copy(message, signers, (_signer(key), request), names, when, _linesep(raw))
    if signed is not None:
        return signed
    sealed = _dkimpy_arc_seal(message, key, authserv_id, names, _linesep(raw))
    return dkim_sign(sealed, key, also=also, timestamp=when) if dkim else sealed


def _dkimpy_arc_seal(
    message: bytes, key: SigningKey, authserv_id: str, names: list[bytes], linesep: bytes
) -> bytes:
    """dkimpy's ARC set, for the chains :func:`sealer.sign_copy` leaves to it (a further
    set on a chain that failed, or one whose sets are incomplete)."""
    arc_set = dkim.arc_sign(
        message,
        key.selector.encode("ascii"),
        key.domain.encode("ascii"),
        key.private_key,
        authserv_id.strip().lower().encode("utf-8"),
        include_headers=names,
        linesep=linesep,
    )
    if not arc_set:
        log.warning("dkimpy made no ARC set for %s (chain ended)", key.domain)
        return message
    return b"".join(arc_set) + message


def _strip_own_results(raw: bytes, authserv_id: str) -> bytes:
    """``raw`` without Authentication-Results headers that claim our authserv-id
    (RFC 8601 §5: they were not written by us)."""
    wanted = authserv_id.lower()
    ours = [
        v
        for v in _header_values(raw, "authentication-results")
        if _authserv_id(v).lower() == wanted
    ]
    if not ours:
        return raw
    kept_others = [
        v
        for v in _header_values(raw, "authentication-results")
        if _authserv_id(v).lower() != wanted
    ]
    stripped = strip_headers(raw, ["Authentication-Results"])
    linesep = _linesep(raw)
    extra = b"".join(b"Authentication-Results: " + v.encode("utf-8") + linesep for v in kept_others)
    return extra + stripped


def _header_values(raw: bytes, name: str) -> list[str]:
    values: list[str] = []
    current: list[bytes] | None = None
    for line in raw[: header_end(raw)].splitlines():
        if line[:1] in (b" ", b"\t") and current is not None:
            current.append(line.strip())
            continue
        if current is not None:
            values.append(b" ".join(current).decode("utf-8", "replace"))
            current = None
        if b":" in line and line.split(b":", 1)[0].strip().lower() == name.encode():
            current = [line.split(b":", 1)[1].strip()]
    if current is not None:
        values.append(b" ".join(current).decode("utf-8", "replace"))
    return values
