"""mtaplugin.mailauth.keys: one cache of parsed private keys for signing and sealing (the
own signer's PEM keys and dkimpy's RSA numbers alike), each key parsed once per process,
the least recently used dropped past the bound."""

from __future__ import annotations

import dkim.crypto
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from mtaplugin.mailauth import keys, openssl_rsa, sealer, signing
from mtaplugin.mailauth.keys import KEYS, KeyCache


@pytest.fixture(scope="module")
def pem() -> bytes:
    return signing.generate_private_key().encode()


def test_sealing_and_dkimpy_s_signing_share_the_one_cache(pem: bytes) -> None:
    KEYS.clear()
    own = sealer.load_key(sealer.RSA_SHA256, pem)
    assert sealer.load_key(sealer.RSA_SHA256, pem) is own  # parsed once
    assert len(KEYS) == 1
    numbers = dkim.crypto.parse_pem_private_key(pem)
    through_dkimpy = openssl_rsa._openssl_key(numbers)
    assert openssl_rsa._openssl_key(numbers) is through_dkimpy
    assert len(KEYS) == 2  # the same cache
    assert isinstance(through_dkimpy, rsa.RSAPrivateKey)
    assert through_dkimpy.private_numbers() == own.private_numbers()  # type: ignore[union-attr]


def test_the_least_recently_used_key_goes_first() -> None:
    cache = KeyCache(size=2)
    made: list[str] = []

    def load(name: str) -> rsa.RSAPrivateKey:
        made.append(name)
        return rsa.generate_private_key(public_exponent=65537, key_size=1024)

    a = cache.get("a", lambda: load("a"))
    cache.get("b", lambda: load("b"))
    assert cache.get("a", lambda: load("a")) is a  # a used again: b is now the oldest
    cache.get("c", lambda: load("c"))
    assert len(cache) == 2
    cache.get("a", lambda: load("a"))
    cache.get("b", lambda: load("b"))  # dropped: made again
    assert made == ["a", "b", "c", "b"]
    assert keys.SIZE >= 8
