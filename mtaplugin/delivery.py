"""What an accepted post becomes before the members get it.

One function for every way a post reaches the members -- the milter's in-place edit, the
outbox copy of a mixed transaction, a released hold -- so that they get the same thing.
Today that is the removal of the approval headers; decorations, List-* headers, DMARC
mitigation and DKIM/ARC arrive with issue #5, here.
"""

from __future__ import annotations

from mtaplugin.message import strip_headers
from mtaplugin.model import MailingList
from mtaplugin.policies.approved import HEADERS as APPROVAL_HEADERS


def members_copy(mlist: MailingList, raw: bytes) -> bytes:
    """The bytes the members of ``mlist`` get for the post ``raw``."""
    return strip_headers(raw, APPROVAL_HEADERS)
