"""What the transforms read: the list, and what the engine decided about this post.

It carries the list's row, so it lives above :mod:`mtaplugin.model` (here, beside the
content filter that reads it first); its row-free parts are in
:mod:`mtaplugin.vocabulary.context`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mtaplugin.vocabulary.context import Templates, no_signature
from mtaplugin.vocabulary.draft import Draft, Field
from mtaplugin.vocabulary.own_copy import OwnCopyInfo

if TYPE_CHECKING:
    from mtaplugin.config import ArchiversSettings
    from mtaplugin.model import MailingList


#: one transform: changes the draft for this context
Step = Callable[["TransformContext", Draft], None]


@dataclass(frozen=True)
class Prepared:
    """What the copy all members share takes from one version of the list (its snapshot)
    alone, made once for that version (:mod:`mtaplugin.copies.plan`), never per post:
    a new version (settings, templates, the domain's address) is a new snapshot, with its
    own.  The steps read it only for the shared copy (``member`` empty)."""

    #: the list's subject prefix, stripped ("" for none)
    subject_prefix: str
    #: List-Id and the RFC 2369 fields of the shared copy, in order
    list_fields: tuple[Field, ...]
    #: the decoration texts (header, footer) of the shared copy ("" for none)
    texts: tuple[str, str]
    #: the archive's steps and the members' steps that can change something on this
    #: list version (a step that would return at once for every post is left out)
    archive_steps: tuple[Step, ...]
    member_steps: tuple[Step, ...]


@dataclass(frozen=True)
class TransformContext:
    mlist: MailingList
    #: the list's web page, "" when its domain has no base_url
    listinfo_url: str = ""
    #: the post's number (``%d`` in the subject prefix)
    post_number: int = 0
    templates: Templates = field(default_factory=Templates)
    #: decided elsewhere (DMARC policy of the From: domain, dmarc_addresses, or the list
    #: mitigates unconditionally): whether munge_from / wrap_message applies to this post
    should_mitigate: bool = False
    #: the list's topics the post matched (X-Topics:)
    topics: tuple[str, ...] = ()
    #: the member this copy is for (personalized copies), "" for the copy all members share
    member: str = ""
    member_name: str = ""
    #: the member's own language ("" = the list's)
    member_language: str = ""
    #: the site secret for per-member unsubscribe tokens ("" = no one-click links)
    unsubscribe_secret: str = ""
    #: the last step, applied to the finished copy: DKIM signature and ARC seal
    sign: Callable[[bytes], bytes] = no_signature
    #: the site's external archivers ([archivers]), whose addresses the post's
    #: ``List-Archive``/``Archived-At`` name too; None: only the built-in archive's
    archivers: ArchiversSettings | None = None
    #: what the shared copy takes from the list version alone, made beforehand (None:
    #: each step reads the list)
    prepared: Prepared | None = None

    @property
    def personalized(self) -> bool:
        return bool(self.member)

    @property
    def shared(self) -> Prepared | None:
        """:attr:`prepared`, for the shared copy only (None for a member's own copy)."""
        return None if self.member else self.prepared

    def own_copy_info(self) -> OwnCopyInfo:
        """What the outbox keeps with this post for making each member's own copy."""
        return OwnCopyInfo(
            self.mlist.list_id,
            self.listinfo_url,
            self.mlist.leave_address,
            self.post_number,
            self.should_mitigate,
        )
