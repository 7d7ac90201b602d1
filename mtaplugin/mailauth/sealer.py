"""The ARC set and the DKIM signature of a copy in one pass (RFC 6376, RFC 8617, RFC 8463).

What dkimpy does for ``arc_sign`` followed by ``sign``, for what the lists send, without
doing anything twice:

- the copy's header block is parsed once and its body canonicalized (relaxed) and hashed
  once: the ARC-Message-Signature and the DKIM-Signature have the same ``c=relaxed/relaxed``,
  no ``l=``, so the same ``bh=``;
- the signed header fields are selected and canonicalized once: both signatures sign the
  same ``h=`` list, and the header fields the ARC set and its Authentication-Results add
  are never in it, so what the two hash before their own header field is the same bytes;
- the keys are loaded once per process (OpenSSL objects from ``cryptography``), and the
  RSA operation stays in OpenSSL.

dkimpy is kept for what this does not do itself: a further ARC set on a chain that failed
validation (``cv=fail``) or whose sets are not complete, and every verification.
``tests/unit/test_sealer.py`` checks each signature this writes with dkimpy's verifiers.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa

from mtaplugin.mailauth.keys import KEYS
from mtaplugin.vocabulary.header_block import header_end

_LINE = re.compile(rb"\r?\n")
_NAME = re.compile(rb"([\x21-\x7e]+?):")
_WSP = re.compile(rb"[\t ]+")
_TRAILING_WSP = re.compile(rb"[\t ]+\r\n")
_INSTANCE = re.compile(rb"(?:^|;)\s*i\s*=\s*(\d+)")
_ARC_NAMES = (b"arc-authentication-results", b"arc-message-signature", b"arc-seal")

RSA_SHA256 = b"rsa-sha256"
ED25519_SHA256 = b"ed25519-sha256"

Header = tuple[bytes, bytes]  # (name as written, value after the colon with its line ends)


# --- parsing and canonicalization (RFC 6376 §3.4) ------------------------------------------
def parse(raw: bytes) -> tuple[list[Header], bytes]:
    """The header fields (name, value with CRLF line ends) and the body with CRLF lines.

    The same reading as dkimpy's, so that what we sign is what its verifier hashes; only
    the header block is split into lines (a large body is converted with two
    ``bytes.replace`` calls, not a regular expression)."""
    end = header_end(raw)
    head = raw[:end]
    lines = _LINE.split(head)
    headers: list[list[bytes]] = []
    for line in lines:
        if not line:
            break
        if line[:1] in (b" ", b"\t"):
            if headers:
                headers[-1][1] += line + b"\r\n"
            continue
        m = _NAME.match(line)
        if m is not None:
            headers.append([m.group(1), line[m.end(0) :] + b"\r\n"])
        elif not line.startswith(b"From "):
            raise ValueError(f"not a header field: {line[:40]!r}")
    body = raw[end:] if end else raw[2 if raw.startswith(b"\r\n") else 1 :]
    if b"\n" in body:
        body = body.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    return [(n, v) for n, v in headers], body


def relaxed_header(name: bytes, value: bytes) -> bytes:
    """``name:value`` relaxed (lower-case name, unfolded, runs of WSP as one space), no CRLF."""
    value = value.rstrip(b"\r\n")  # (strip() below takes any CR the regex would leave)
    if b"\n" in value:  # folded
        value = _LINE.sub(b"", value)
    if b"\t" in value or b"  " in value:
        value = _WSP.sub(b" ", value)
    return name.lower().rstrip() + b":" + value.strip()


def relaxed_body(body: bytes) -> bytes:
    """The body relaxed: no WSP at line ends, runs of WSP as one space, no empty lines at
    the end, a CRLF after the last line; nothing for an empty body."""
    # The regular expressions scan every byte: run them only when there is something for
    # them to change (``in`` is a fast search).
    tabs = b"\t" in body
    if tabs or b" \r\n" in body:
        body = _TRAILING_WSP.sub(b"\r\n", body)
    if tabs or b"  " in body:
        body = _WSP.sub(b" ", body)
    if not body.endswith(b"\r\n"):
        body += b"\r\n"
    else:
        end = len(body)
        while end >= 4 and body[end - 4 : end] == b"\r\n\r\n":
            end -= 2
        body = body[:end]
    return b"" if body == b"\r\n" else body


def select(headers: list[Header], names: list[bytes]) -> list[Header]:
    """The header fields ``h=`` names, each name taking the next occurrence from the bottom;
    a name with no occurrence left (an oversigned one) takes none."""
    chosen: list[Header] = []
    last: dict[bytes, int] = {}
    for name in names:
        i = last.get(name, len(headers))
        while i > 0:
            i -= 1
            if headers[i][0].lower() == name:
                chosen.append(headers[i])
                break
        last[name] = i
    return chosen


def signed_prefix(headers: list[Header], names: list[bytes]) -> bytes:
    """What a signature with ``h=names`` hashes before its own header field."""
    return b"".join(relaxed_header(n, v) + b"\r\n" for n, v in select(headers, names))


# --- keys ------------------------------------------------------------------------------------
def load_key(algorithm: bytes, private_key: bytes) -> rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey:
    """The OpenSSL key for a signing key's ``private_key`` (PEM for RSA, the base64 seed for
    Ed25519), parsed once per process (:data:`mtaplugin.mailauth.keys.KEYS`)."""

    def parse() -> rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey:
        if algorithm == ED25519_SHA256:
            return ed25519.Ed25519PrivateKey.from_private_bytes(base64.b64decode(private_key))
        loaded = serialization.load_pem_private_key(private_key, password=None)
        if not isinstance(loaded, rsa.RSAPrivateKey):
            raise ValueError("an rsa-sha256 signature needs an RSA key")
        return loaded

    return KEYS.get(key_ident(algorithm, private_key), parse)


def key_ident(algorithm: bytes, private_key: bytes) -> tuple[str, bytes, bytes]:
    """What :func:`load_key` finds a parsed key by in :data:`~mtaplugin.mailauth.keys.KEYS`."""
    return ("private key", algorithm, private_key)


def sign_bytes(algorithm: bytes, private_key: bytes, data: bytes) -> bytes:
    """The b= octets over ``data`` (the canonicalized header fields)."""
    key = load_key(algorithm, private_key)
    if isinstance(key, ed25519.Ed25519PrivateKey):
        # RFC 8463 §3: Ed25519 signs the SHA-256 hash of the header data
        return key.sign(hashlib.sha256(data).digest())
    return key.sign(data, padding.PKCS1v15(), hashes.SHA256())


# --- header fields ---------------------------------------------------------------------------
def _fold(tags: list[bytes], name: bytes, linesep: bytes) -> bytes:
    """``tag; tag; ...`` folded before a tag that would pass 76 columns."""
    out = b""
    column = len(name) + 1
    for n, tag in enumerate(tags):
        piece = tag if n == 0 else b"; " + tag
        if n and column + len(piece) > 76:
            out += b";" + linesep + b"\t" + tag
            column = 1 + len(tag)
        else:
            out += b" " + tag if n == 0 else piece
            column += len(piece) + (1 if n == 0 else 0)
    return out


@dataclass(frozen=True)
class SignedField:
    """A signature header field: ``line`` as it goes on the copy (with its line end),
    ``canonical`` as a later ARC-Seal hashes it."""

    line: bytes
    canonical: bytes


def signature_field(
    name: bytes,
    tags: list[bytes],
    prefix: bytes,
    algorithm: bytes,
    private_key: bytes,
    linesep: bytes,
) -> SignedField:
    """The header field ``name`` with ``tags`` and a b= signing ``prefix`` and itself."""
    value = _fold(tags, name, linesep) + b";" + linesep + b"\tb="
    unsigned = relaxed_header(name, value)
    signature = base64.b64encode(sign_bytes(algorithm, private_key, prefix + unsigned))
    chunks = [signature[i : i + 72] for i in range(0, len(signature), 72)]
    value += (linesep + b"\t ").join(chunks)
    line = name + b":" + value + linesep
    return SignedField(line, relaxed_header(name, value) + b"\r\n")


# --- the whole copy ------------------------------------------------------------------------
@dataclass(frozen=True)
class Signer:
    domain: bytes
    selector: bytes
    private_key: bytes
    algorithm: bytes = RSA_SHA256


@dataclass(frozen=True)
class ArcRequest:
    """What the ARC set records: ``results`` is the Authentication-Results value (with our
    authserv-id) and ``cv`` the chain validation status (``none`` for a first seal)."""

    results: str
    cv: bytes


def prior_sets(headers: list[Header]) -> list[list[Header]] | None:
    """The ARC sets already on the copy, by instance (``[]`` when there are none; None when
    they are not complete sets 1..N, which dkimpy then handles)."""
    by_instance: dict[int, dict[bytes, Header]] = {}
    for name, value in headers:
        lower = name.lower()
        if lower not in _ARC_NAMES:
            continue
        m = _INSTANCE.search(_LINE.sub(b"", value))
        if m is None:
            return None
        found = by_instance.setdefault(int(m.group(1)), {})
        if lower in found:
            return None
        found[lower] = (name, value)
    if sorted(by_instance) != list(range(1, len(by_instance) + 1)):
        return None
    out: list[list[Header]] = []
    for i in sorted(by_instance):
        if len(by_instance[i]) != 3:
            return None
        out.append([by_instance[i][n] for n in _ARC_NAMES])
    return out


def _aar_value(instance: int, results: str, linesep: bytes) -> bytes:
    parts = [p.strip() for p in results.split(";") if p.strip()]
    return (
        b" i="
        + str(instance).encode()
        + b"; "
        + (b";" + linesep + b"\t").join(p.encode("utf-8") for p in parts)
    )


def sign_copy(
    raw: bytes,
    dkim: list[Signer],
    arc: tuple[Signer, ArcRequest] | None,
    names: list[bytes],
    timestamp: int,
    linesep: bytes = b"\r\n",
) -> bytes | None:
    """``raw`` with the ARC set of ``arc`` (when given) and a DKIM-Signature per signer in
    ``dkim``, all signing the header fields ``names``; None when the ARC set is one this
    does not make (a chain that failed or whose sets are incomplete: dkimpy's part)."""
    headers, body = parse(raw)
    bh = base64.b64encode(hashlib.sha256(relaxed_body(body)).digest())
    prefix = signed_prefix(headers, names)
    h = b" : ".join(names)
    t = str(timestamp).encode()
    added: list[bytes] = []
    if arc is not None:
        signer, request = arc
        sets = prior_sets(headers)
        if sets is None or (sets and request.cv != b"pass") or (not sets and request.cv != b"none"):
            return None
        instance = str(len(sets) + 1).encode()
        aar_value = _aar_value(len(sets) + 1, request.results, linesep)
        aar_line = b"ARC-Authentication-Results:" + aar_value + linesep
        common = [b"a=" + signer.algorithm, b"d=" + signer.domain, b"s=" + signer.selector]
        ams = signature_field(
            b"ARC-Message-Signature",
            [b"i=" + instance, *common, b"c=relaxed/relaxed", b"t=" + t, b"h=" + h, b"bh=" + bh],
            prefix,
            signer.algorithm,
            signer.private_key,
            linesep,
        )
        chain = b"".join(relaxed_header(n, v) + b"\r\n" for s in sets for n, v in s)
        chain += relaxed_header(b"ARC-Authentication-Results", aar_value) + b"\r\n"
        seal = signature_field(
            b"ARC-Seal",
            [b"i=" + instance, b"cv=" + request.cv, *common, b"t=" + t],
            chain + ams.canonical,
            signer.algorithm,
            signer.private_key,
            linesep,
        )
        added = [seal.line, ams.line, aar_line]
    signatures = [
        signature_field(
            b"DKIM-Signature",
            [
                b"v=1",
                b"a=" + s.algorithm,
                b"c=relaxed/relaxed",
                b"d=" + s.domain,
                b"s=" + s.selector,
                b"t=" + t,
                b"h=" + h,
                b"bh=" + bh,
            ],
            prefix,
            s.algorithm,
            s.private_key,
            linesep,
        ).line
        for s in dkim
    ]
    return b"".join(signatures) + b"".join(added) + raw
