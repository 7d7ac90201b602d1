"""VERP (variable envelope return path): a copy's envelope sender names its recipient, so
that a bounce says whose address failed even when the DSN itself cannot be parsed.

As in Mailman: ``list-bounces+anne=example.org@lists.example.com`` for the member
``anne@example.org`` of the list whose bounce address is ``list-bounces@lists.example.com``.
A probe's return path carries a token instead (``list-bounces+TOKEN@...``): a token has
no ``=``.
"""

from __future__ import annotations


def encode(bounces_address: str, member: str) -> str:
    """The VERPed return path of ``member``'s copy."""
    local, _, host = bounces_address.rpartition("@")
    mailbox, _, domain = member.rpartition("@")
    return f"{local}+{mailbox}={domain}@{host}"


def encode_token(bounces_address: str, token: str) -> str:
    """The return path of a probe, or of anything else a token names."""
    local, _, host = bounces_address.rpartition("@")
    return f"{local}+{token}@{host}"


def member_of(extension: str) -> str | None:
    """The member a ``-bounces`` address's extension names (``anne=example.org`` gives
    ``anne@example.org``); None when the extension is no VERPed address (a token)."""
    mailbox, eq, domain = extension.rpartition("=")
    if not eq or not mailbox or not domain or "." not in domain:
        return None
    return f"{mailbox}@{domain}".lower()
