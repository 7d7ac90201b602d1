"""One-click unsubscribe links (RFC 8058): the URL format and its token.

A member's copy carries::

    List-Unsubscribe: <https://lists.example.org/lists/team.example.org/unsubscribe/TOKEN>,
     <mailto:team-leave@example.org>
    List-Unsubscribe-Post: List-Unsubscribe=One-Click

``TOKEN`` is ``base64url(list_id "\\n" email) "." base64url(HMAC-SHA256(secret, ...)[:16])``
with the site's ``site.secret_key``.  Why an HMAC and not a random token per member kept in
SQL: a post to a list of 10,000 members would have to read (or write) 10,000 tokens before
it can leave; the HMAC costs a microsecond per copy, needs no table, works the same on
every mail host that shares the settings, and :func:`verify` needs no database either.
The token names one member of one list and cannot be forged without the secret.

"One-time": the link does one thing -- it unsubscribes that address from that list.  Used
again, there is nothing left to do (the web endpoint answers "not a member").  Changing
``site.secret_key`` revokes every link ever sent.

RFC 8058 §3.1 wants the URL to identify the recipient, so a one-click header exists only
on copies made for one member (see :mod:`mtaplugin.copies.transforms.personalize`); the copy all
members share, fanned out by the MTA, carries the list's unsubscribe page and the mailto
link, without ``List-Unsubscribe-Post``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

_CONTEXT = b"mtaplugin-unsubscribe\0"
_MAC_BYTES = 16


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: str, data: bytes) -> bytes:
    return hmac.new(secret.encode(), _CONTEXT + data, hashlib.sha256).digest()[:_MAC_BYTES]


def make_token(secret: str, list_id: str, email: str) -> str:
    if not secret:
        raise ValueError("site.secret_key is not set")
    data = f"{list_id}\n{email.lower()}".encode()
    return f"{_b64(data)}.{_b64(_mac(secret, data))}"


def verify(secret: str, token: str) -> tuple[str, str] | None:
    """(list_id, email) for a genuine token, else None."""
    if not secret or token.count(".") != 1:
        return None
    data_part, mac_part = token.split(".")
    try:
        data = _unb64(data_part)
        mac = _unb64(mac_part)
    except (binascii.Error, ValueError):
        return None
    if not hmac.compare_digest(mac, _mac(secret, data)):
        return None
    try:
        list_id, email = data.decode().split("\n")
    except (UnicodeDecodeError, ValueError):
        return None
    return list_id, email


def list_page_url(listinfo_url: str) -> str:
    """The list's unsubscribe page (asks for the address); "" without a web address."""
    return f"{listinfo_url}unsubscribe" if listinfo_url else ""


def one_click_url(listinfo_url: str, token: str) -> str:
    """Where the member's mail client POSTs ``List-Unsubscribe=One-Click``."""
    return f"{listinfo_url}unsubscribe/{token}"
