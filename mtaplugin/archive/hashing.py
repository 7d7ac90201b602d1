"""A post's Message-ID as the archive knows it, and Mailman 3's hash of it.

Mailman (``Message-ID-Hash:``, HyperKitty's permalinks) names an archived post by the
base32 text of the SHA-1 of its Message-ID without the angle brackets: the first and last
character go only when they are ``<`` and ``>``, else the whole value (white space
stripped) is hashed.

A post without a Message-ID gets one made from its content
(:func:`content_message_id`): the same post gives the same Message-ID every time the
archive copy is made (the members' copy, the digest's and the archive's are made apart, and
must name the same post), and a post that comes twice is archived once.  A random one
(Mailman's LMTP runner adds ``make_msgid()``) would differ between those copies.
"""

from __future__ import annotations

import hashlib
from base64 import b32encode


def bare(message_id: str) -> str:
    """The Message-ID without its angle brackets."""
    value = message_id.strip()
    if value.startswith("<") and value.endswith(">"):
        return value[1:-1]
    return value


def message_id_hash(message_id: str) -> str:
    """Mailman 3's hash: base32 of the SHA-1 of the bare Message-ID (32 characters)."""
    digest = hashlib.sha1(bare(message_id).encode("utf-8", "surrogateescape")).digest()
    return b32encode(digest).decode("ascii")


def content_message_id(
    headers: list[tuple[str, str]],
    body: bytes,
    host: str,
    wanted: frozenset[str] = frozenset({"from", "date", "subject", "to"}),
) -> str:
    """A Message-ID made from a post's From, Date, Subject, To and body (line ends made
    one), at ``host``."""
    h = hashlib.sha1()
    for name, value in headers:
        if name.lower() in wanted:
            h.update(f"{name.lower()}:{' '.join(value.split())}\n".encode("utf-8", "replace"))
    h.update(b"\n")
    h.update(body.replace(b"\r\n", b"\n"))
    return f"<archive.{h.hexdigest()}@{host or 'localhost'}>"
