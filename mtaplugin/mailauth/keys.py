"""The one cache of parsed private keys, for signing and sealing alike: a key is parsed
into an OpenSSL key once per process (a PEM parse, or building an RSA key from its numbers,
costs more than the signature), then found by what it was made from.  At most
:data:`SIZE` keys, the least recently used one dropped first; safe across threads."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

#: keys kept at most (a site signs for a few domains, each with one or two keys)
SIZE = 64

PrivateKey = rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey
K = TypeVar("K", rsa.RSAPrivateKey, ed25519.Ed25519PrivateKey, PrivateKey)


class KeyCache:
    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._keys: OrderedDict[Hashable, PrivateKey] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, ident: Hashable, load: Callable[[], K]) -> K:
        """The key ``ident`` names, made by ``load`` the first time (outside the lock: two
        threads may both parse a new key; one of the two is kept)."""
        with self._lock:
            key = self._keys.get(ident)
            if key is not None:
                self._keys.move_to_end(ident)
                return key  # type: ignore[return-value]  # stored by this same ident
        made = load()
        with self._lock:
            self._keys[ident] = made
            while len(self._keys) > self.size:
                self._keys.popitem(last=False)
        return made

    def __len__(self) -> int:
        return len(self._keys)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()


#: the process's one key cache
KEYS = KeyCache()
