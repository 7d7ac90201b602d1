"""What an accepted post becomes: the members' copy and the archive's copy.

The whole sequence, in the order it runs (Mailman's default-posting-pipeline order, then
its delivery-time steps).  Each step is a small function ``step(ctx, draft)`` in its own
module; a step that has nothing to do for a list returns at once.

====================  =====================================================================
cleanse               approval headers, read-receipt requests; an anonymous list's poster
content_filter        filter_types/pass_types/extensions, collapse_alternatives, HTML→text
reply_to              reply_goes_to_list, first_strip_reply_to, reply_to_address
topics                ``X-Topics:`` (lists with topics)
precedence            ``Precedence: list``
subject_prefix        ``[list] Re: subject`` (``%d``: the post number)
list_headers          List-Id, List-Help/-Post/-Owner/-Subscribe/-Unsubscribe
archived_at           Message-ID when missing, List-Archive, Archived-At (lists that archive)
(archive copy)        the archive and the digests get the post here, before DMARC
own_unsubscribe       a member's own copy only: its one-click unsubscribe link
full_personalization  a member's own copy, ``personalize = full``: To: the member, list in Cc:
decorate              header and footer texts
mitigate              DMARC munge_from / wrap_message
sign                  DKIM signature and ARC seal by the list domain (``ctx.sign``)
====================  =====================================================================

``members_copy`` gives the bytes every member gets (one copy, fanned out by the MTA);
``own_copy`` one member's copy, made from the archive copy by the outbox worker (see
:mod:`mtaplugin.copies.transforms.personalize`); ``archive_copy`` the bytes the archive and the
digests keep.  Whether the post may go at all (rules, content filter's filter_action,
DMARC reject/discard) was decided before, at end of DATA.
"""

from __future__ import annotations

from email.message import Message

from mtaplugin.copies.transforms import (
    archived_at,
    cleanse,
    decorate,
    dmarc_mitigation,
    headers,
    personalize,
)
from mtaplugin.posting import content_filter
from mtaplugin.posting.transform_context import Step, TransformContext
from mtaplugin.vocabulary.draft import Draft

#: what the archive and the digests get
ARCHIVE_STEPS: tuple[Step, ...] = (
    cleanse.cleanse,
    content_filter.content_filter,
    headers.reply_to,
    headers.topics,
    headers.precedence,
    headers.subject_prefix,
    headers.list_headers,
    archived_at.archive_fields,
)
#: what the members get (then ``ctx.sign``)
MEMBER_STEPS: tuple[Step, ...] = (*ARCHIVE_STEPS, decorate.decorate, dmarc_mitigation.mitigate)
#: what one member's own copy gets on top of the archive copy (then ``ctx.sign``)
OWN_STEPS: tuple[Step, ...] = (
    personalize.own_unsubscribe,
    headers.full_personalization,
    decorate.decorate,
    dmarc_mitigation.mitigate,
)
#: what one member's own copy of a digest gets (then ``ctx.sign``)
DIGEST_OWN_STEPS: tuple[Step, ...] = (personalize.own_unsubscribe,)


def run(
    ctx: TransformContext,
    raw: bytes,
    steps: tuple[Step, ...],
    parsed: Message | None = None,
    end: int = -1,
) -> Draft:
    """``parsed``, ``end``: see :meth:`Draft.from_bytes`.  The shared copy of a list
    version whose steps were sorted beforehand (``ctx.prepared``) runs only those that
    can change something on it."""
    draft = Draft.from_bytes(raw, parsed, end)
    shared = ctx.shared
    if shared is not None:
        if steps is MEMBER_STEPS:
            steps = shared.member_steps
        elif steps is ARCHIVE_STEPS:
            steps = shared.archive_steps
    for step in steps:
        step(ctx, draft)
    return draft


def members_copy(ctx: TransformContext, raw: bytes) -> bytes:
    """The bytes the members get, signed by ``ctx.sign`` (the last step)."""
    return ctx.sign(run(ctx, raw, MEMBER_STEPS).to_bytes())


def own_copy(ctx: TransformContext, archive: bytes, steps: tuple[Step, ...] = OWN_STEPS) -> bytes:
    """``ctx.member``'s own copy, from the archive copy (the outbox worker makes it); a
    digest's own copy takes ``DIGEST_OWN_STEPS``."""
    return ctx.sign(run(ctx, archive, steps).to_bytes())


def archive_copy(ctx: TransformContext, raw: bytes) -> bytes:
    """The post as the archive and the digests keep it: before decoration and DMARC."""
    return run(ctx, raw, ARCHIVE_STEPS).to_bytes()


__all__ = [
    "ARCHIVE_STEPS",
    "DIGEST_OWN_STEPS",
    "MEMBER_STEPS",
    "Step",
    "archive_copy",
    "members_copy",
    "own_copy",
    "run",
]
