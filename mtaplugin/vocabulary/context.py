"""What the transforms read: the list, and what the engine decided about this post."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mtaplugin.config import ArchiversSettings
    from mtaplugin.model import MailingList


def no_signature(raw: bytes) -> bytes:
    """The default last step: no DKIM signature, no ARC seal."""
    return raw


#: Mailman's list:member:generic:footer.txt
DEFAULT_FOOTER = (
    "_______________________________________________\n"
    "$display_name mailing list -- $listname\n"
    "To unsubscribe send an email to ${short_listname}-leave@${domain}\n"
)
DEFAULT_HEADER = ""


@dataclass(frozen=True)
class Templates:
    """The list's decoration templates (Mailman's ``list:member:regular:header`` and
    ``...:footer``), found list → domain → site → built in.  ``None``: the built-in
    default; ``""``: none."""

    header: str | None = None
    footer: str | None = None


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

    @property
    def personalized(self) -> bool:
        return bool(self.member)
