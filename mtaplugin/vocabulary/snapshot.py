"""The plain parts of a list's snapshot (:class:`mtaplugin.posting.snapshot.ListSnapshot`):
a member due for regular delivery, the roles an address holds, a header match.  No list
row here: the snapshot itself carries the list's ``MailingList`` row, so it lives above
:mod:`mtaplugin.model`, in the posting core that reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from mtaplugin.enums import Action, MemberRole
from mtaplugin.regexes import Pattern

log = logging.getLogger(__name__)

Roles = Mapping[MemberRole, Action | None]


class Recipient(NamedTuple):
    """A member due for regular delivery.  (A tuple: a snapshot holds one per member, and a
    100 000-member list's snapshot is built on the first post's decision.)"""

    email: str
    receive_own_postings: bool
    #: False: no list copy when the post names the member in To:/Cc: (Mailman's
    #: "avoid duplicates")
    receive_list_copy: bool = True


def delivery_emails(recipients: Iterable[Recipient], sender: str) -> tuple[str, ...]:
    """Who gets a post from ``sender``: every recipient, but the sender only when they
    asked for their own posts (receive_own_postings)."""
    return tuple(r.email for r in recipients if r.receive_own_postings or r.email != sender)


@dataclass(frozen=True)
class HeaderRule:
    """One header match: a case-insensitive regex searched in every value of a header."""

    header: str
    pattern: Pattern
    #: None: the site's ``header_match_action`` (hold)
    action: Action | None
    text: str
