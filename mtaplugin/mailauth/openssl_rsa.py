"""dkimpy signs RSA through OpenSSL: :func:`install_openssl_rsa` puts
:func:`openssl_rsa_sign` in place of dkimpy's pure-Python ``RSASSA_PKCS1_v1_5_sign``
(process-wide; :func:`mtaplugin.mailauth.service.install` calls it), with the keys made
once per process in the one key cache (:data:`mtaplugin.mailauth.keys.KEYS`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dkim
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

from mtaplugin.mailauth.keys import KEYS

_HASHES: dict[str, Callable[[], hashes.HashAlgorithm]] = {
    "sha256": hashes.SHA256,
    "sha1": hashes.SHA1,
}
_dkimpy_rsa_sign: Callable[[Any, dict[str, int]], bytes] | None = None


def _openssl_key(pk: dict[str, int]) -> rsa.RSAPrivateKey:
    """dkimpy's parsed private key (a dict of the RFC 8017 numbers) as an OpenSSL key, made
    once per process (:data:`mtaplugin.mailauth.keys.KEYS`)."""
    names = ("prime1", "prime2", "privateExponent", "exponent1", "exponent2", "coefficient")
    ident = ("rsa numbers", pk["modulus"], pk["publicExponent"], *(pk[n] for n in names))

    def build() -> rsa.RSAPrivateKey:
        public = rsa.RSAPublicNumbers(pk["publicExponent"], pk["modulus"])
        return rsa.RSAPrivateNumbers(
            p=pk["prime1"],
            q=pk["prime2"],
            d=pk["privateExponent"],
            dmp1=pk["exponent1"],
            dmq1=pk["exponent2"],
            iqmp=pk["coefficient"],
            public_numbers=public,
        ).private_key()

    return KEYS.get(ident, build)


def openssl_rsa_sign(digest: Any, pk: dict[str, int]) -> bytes:
    """RSASSA-PKCS1-v1_5 over dkimpy's hash object, with dkimpy's signature contract."""
    algorithm = _HASHES.get(str(getattr(digest, "name", "")))
    if algorithm is None:
        assert _dkimpy_rsa_sign is not None
        return _dkimpy_rsa_sign(digest, pk)
    key = _openssl_key(pk)
    return key.sign(digest.digest(), padding.PKCS1v15(), Prehashed(algorithm()))


def install_openssl_rsa() -> bool:
    """Make dkimpy sign RSA through OpenSSL (it replaces ``dkim.RSASSA_PKCS1_v1_5_sign``,
    process-wide).  Idempotent; False if dkimpy has no such hook any more."""
    global _dkimpy_rsa_sign
    current = getattr(dkim, "RSASSA_PKCS1_v1_5_sign", None)
    if current is None:
        return False
    if current is not openssl_rsa_sign:
        _dkimpy_rsa_sign = current
        dkim.RSASSA_PKCS1_v1_5_sign = openssl_rsa_sign
    return True
