"""A list's ``moderator_password`` (Mailman's ``Approved:``/``Urgent:`` password), checked
within a fixed budget per post.

A password hash is slow on purpose (argon2: about 130 ms and 64 MiB), and the post that
carries the candidate comes from anyone, inside the SMTP transaction.  So:

- **one check per post**: the first check of a post spends its budget
  (:data:`CHECKS_PER_POST`); any later one -- the ``urgent`` and ``moderator-password``
  rules of the same list, a second list of the same transaction, the LMTP front end
  deciding each recipient on its own, a moderator's reply read twice -- is answered
  from the memo below, or not at all (False: the post is not approved by password, and
  the other rules decide).  The budget is kept per post (the SHA-256 of its bytes) for
  the last :data:`POSTS_KEPT` posts of the process;
- **only one value**: the callers pass the first non-empty value of the headers, never
  a loop over them; a value longer than :data:`passwords.MAX_LENGTH` (no password that
  long can be set) is refused without hashing;
- **a keyed memo** of what was checked in this process: an HMAC-SHA256 under a random
  per-process key of (hash, value) -> right or wrong, and, once the right password was
  seen for a hash, the HMAC of it, so that every later value for that hash is decided by
  one HMAC (a wrong one too).  The memo holds no password and dies with the process.

Every check made (a real hash verification) is logged at INFO, without the value.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterable

from mtaplugin import passwords

log = logging.getLogger(__name__)

#: real hash verifications one post may cost
CHECKS_PER_POST = 1
#: posts whose budget is remembered (a post decided again later gets a new budget)
POSTS_KEPT = 1024
#: (hash, value) results remembered
RESULTS_KEPT = 4096


class _Memo:
    """What this process learnt about candidate values (keyed hashes only)."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)
        self._results: OrderedDict[bytes, bool] = OrderedDict()
        #: hash -> the keyed hash of the value that verified against it
        self._right: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def tag(self, value: str, hashed: str) -> bytes:
        data = hashed.encode("utf-8", "surrogateescape") + b"\0"
        data += value.encode("utf-8", "surrogateescape")
        return hmac.new(self._key, data, hashlib.sha256).digest()

    def known(self, tag: bytes, hashed: str) -> bool | None:
        with self._lock:
            right = self._right.get(hashed)
            if right is not None:
                return hmac.compare_digest(tag, right)
            found = self._results.get(tag)
            if found is not None:
                self._results.move_to_end(tag)
            return found

    def remember(self, tag: bytes, hashed: str, ok: bool) -> None:
        with self._lock:
            if ok:
                self._right[hashed] = tag
                if len(self._right) > RESULTS_KEPT:
                    self._right.popitem(last=False)
            self._results[tag] = ok
            if len(self._results) > RESULTS_KEPT:
                self._results.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._results.clear()
            self._right.clear()


class _Budgets:
    """Checks left per post, by the SHA-256 of its bytes."""

    def __init__(self) -> None:
        self._left: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, raw: bytes) -> bool:
        """Spend one check of the post ``raw``; False when none is left."""
        digest = hashlib.sha256(raw).digest()
        with self._lock:
            left = self._left.get(digest, CHECKS_PER_POST)
            self._left[digest] = max(left - 1, 0)
            self._left.move_to_end(digest)
            if len(self._left) > POSTS_KEPT:
                self._left.popitem(last=False)
        return left > 0

    def clear(self) -> None:
        with self._lock:
            self._left.clear()


MEMO = _Memo()
BUDGETS = _Budgets()


def matches(raw: bytes, value: str, hashed: str | None, where: str = "") -> bool:
    """Whether ``value`` (one header value of the post ``raw``) is the password whose hash
    is ``hashed``, within the post's budget (see the module doc).  ``where``: the list,
    for the log.  False for an empty value, an empty or unknown hash, a value too long,
    and when the post's budget is spent."""
    value = value.strip()
    if not value or not hashed or len(value) > passwords.MAX_LENGTH:
        return False
    tag = MEMO.tag(value, hashed)
    known = MEMO.known(tag, hashed)
    if known is not None:
        return known
    if not BUDGETS.take(raw):
        log.info("moderator password of %s not checked: this post had its check", where or "?")
        return False
    ok = passwords.verify(value, hashed)
    MEMO.remember(tag, hashed, ok)
    log.info("moderator password of %s checked: %s", where or "?", "right" if ok else "wrong")
    return ok


def first_value(fields: Iterable[tuple[str, object]], names: tuple[str, ...]) -> str:
    """The first non-empty value of a field named in ``names`` (case-insensitive), in the
    order of ``fields``; "" when there is none.  Later ones are never looked at."""
    wanted = {n.lower() for n in names}
    for name, value in fields:
        if name.lower() in wanted and str(value).strip():
            return str(value).strip()
    return ""
