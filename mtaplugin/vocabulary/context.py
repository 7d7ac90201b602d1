"""The row-free parts of what the transforms read: the list's decoration templates, the
built-in header and footer, and the last step that signs nothing.  The context itself
(:class:`mtaplugin.posting.transform_context.TransformContext`) carries the list's row, so it
lives above :mod:`mtaplugin.model`."""

from __future__ import annotations

from dataclasses import dataclass


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
