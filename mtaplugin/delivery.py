"""What an accepted post becomes before the members get it.

One function for every way a post reaches the members -- the milter's in-place edit, the
outbox copy of a mixed transaction, a released hold -- so that they get the same thing.
Today that is the removal of the approval headers; decorations, List-* headers, DMARC
mitigation and DKIM/ARC arrive with issue #5, here.
"""

from __future__ import annotations

from mtaplugin.message import Post, strip_headers
from mtaplugin.model import MailingList
from mtaplugin.policies.approved import HEADERS as APPROVAL_HEADERS

#: headers the members never see (the approval, which may carry a password)
REMOVED_HEADERS = APPROVAL_HEADERS


def headers_to_remove(post: Post) -> tuple[str, ...]:
    """Of :data:`REMOVED_HEADERS`, those ``post`` has (for the milter's in-place edit)."""
    return tuple(h for h in REMOVED_HEADERS if post.get_all(h))


def members_copy(mlist: MailingList, raw: bytes) -> bytes:
    """The bytes the members of ``mlist`` get for the post ``raw``."""
    return strip_headers(raw, REMOVED_HEADERS)
