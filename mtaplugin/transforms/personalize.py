"""A member's own copy: the shared copy with that member's one-click unsubscribe link.

RFC 8058 one-click needs a URL that names the member (Gmail and Yahoo ask bulk senders for
it since February 2024), and one copy fanned out by the MTA cannot name each member.  So
a list whose domain has a web address (``domains.base_url``) while the site has a
``site.secret_key`` sends its posts through the outbox, and the worker makes each member's
copy just before it goes: this module replaces the shared ``List-Unsubscribe`` field by
the member's link and adds ``List-Unsubscribe-Post: List-Unsubscribe=One-Click``.  The
rest of the copy (and its MIME body) is the shared one, byte for byte.

Without a secret or a web address, every member gets the shared copy: the list's
unsubscribe page (when there is one) and the mailto link, and no ``List-Unsubscribe-Post``
(a one-click POST to a page that does not know who clicked would be a lie).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mtaplugin import unsubscribe_tokens
from mtaplugin.message import header_end
from mtaplugin.transforms.draft import Draft


@dataclass(frozen=True)
class Personalization:
    """What the worker needs to make a member's copy (kept with the outbox row)."""

    list_id: str
    listinfo_url: str
    leave_address: str

    def as_record(self) -> dict[str, str]:
        return {
            "list_id": self.list_id,
            "listinfo_url": self.listinfo_url,
            "leave_address": self.leave_address,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Personalization:
        return cls(
            str(record.get("list_id", "")),
            str(record.get("listinfo_url", "")),
            str(record.get("leave_address", "")),
        )


def member_fields(info: Personalization, email: str, secret: str) -> list[tuple[str, str]]:
    """The unsubscribe fields of ``email``'s own copy ([] when there can be none)."""
    if not (email and secret and info.listinfo_url):
        return []
    token = unsubscribe_tokens.make_token(secret, info.list_id, email)
    url = unsubscribe_tokens.one_click_url(info.listinfo_url, token)
    return [
        ("List-Unsubscribe", f"<{url}>, <mailto:{info.leave_address}>"),
        ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
    ]


def member_copy(shared: bytes, info: Personalization, email: str, secret: str) -> bytes:
    """``shared`` as ``email`` gets it."""
    fields = member_fields(info, email, secret)
    if not fields:
        return shared
    end = header_end(shared)
    draft = Draft.from_bytes(shared[:end])
    had = draft.has("List-Unsubscribe")
    draft.remove("List-Unsubscribe", "List-Unsubscribe-Post")
    if not had and not draft.has("List-Id"):
        return shared  # not a list post (nothing to personalize)
    for name, value in fields:
        draft.append(name, value)
    return draft.header_bytes() + shared[end:]
