"""The paths an accepted post takes to the members, and what it becomes on each.

One place for every way a post reaches the members -- the milter's in-place edit, the
outbox copy of a mixed transaction or of a large list, a released hold -- so that they get
the same thing: :func:`mtaplugin.copies.transforms.members_copy`, the sequence of its
transforms.

- :func:`context` gathers what the transforms read for one list and one post.
- :func:`in_place_edits` turns the members' copy into the milter's header edits (and a new
  body only when the body changed), so that Postfix can fan the post out itself.
- :func:`own_copies` says whether a list's members get their own copies (one-click
  unsubscribe links and personalized footers need them; see
  :mod:`mtaplugin.copies.transforms.personalize`).
- :func:`dispose_filtered` does a list's ``filter_action`` forward/preserve when content
  filtering keeps the whole post from the members.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbox
from mtaplugin.config import ArchiversSettings
from mtaplugin.copies import plan, transforms
from mtaplugin.enums import FilterAction, Personalization
from mtaplugin.lists.cache import load_templates
from mtaplugin.model import Domain, FilteredPost, MailingList
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.transform_context import Prepared, TransformContext
from mtaplugin.vocabulary.context import Templates, no_signature
from mtaplugin.vocabulary.draft import HeaderOp, header_ops, parse_fields
from mtaplugin.vocabulary.envelope import Post
from mtaplugin.vocabulary.header_block import header_end

Signer = Callable[[MailingList, bytes], bytes]


def no_signer(mlist: MailingList, raw: bytes) -> bytes:
    return raw


def context(
    mlist: MailingList,
    *,
    listinfo_url: str = "",
    templates: Templates | None = None,
    post_number: int | None = None,
    should_mitigate: bool = False,
    sign: Signer = no_signer,
    topics: tuple[str, ...] = (),
    archivers: ArchiversSettings | None = None,
    prepared: Prepared | None = None,
) -> TransformContext:
    return TransformContext(
        mlist=mlist,
        listinfo_url=listinfo_url,
        post_number=mlist.post_id if post_number is None else post_number,
        templates=templates or Templates(),
        should_mitigate=should_mitigate,
        sign=_signature(mlist, sign),
        topics=topics,
        archivers=archivers,
        prepared=prepared,
    )


def _signature(mlist: MailingList, sign: Signer) -> Callable[[bytes], bytes]:
    """The copy's last step: ``no_signature`` when ``sign`` would not sign this list's
    copies (a signer that knows beforehand has ``signs(mlist)``)."""
    signs: Callable[[MailingList], bool] | None = getattr(sign, "signs", None)
    if sign is no_signer or (signs is not None and not signs(mlist)):
        return no_signature
    return lambda raw: sign(mlist, raw)


def snapshot_context(
    snap: ListSnapshot, post_number: int | None = None, **kwargs: object
) -> TransformContext:
    """For a post on a list's snapshot: what its shared copy takes from the list version
    alone is made once per snapshot (:mod:`mtaplugin.copies.plan`)."""
    return context(
        snap.mlist,
        listinfo_url=snap.listinfo_url,
        templates=snap.templates,
        post_number=post_number,
        prepared=plan.for_snapshot(snap),
        **kwargs,  # type: ignore[arg-type]
    )


def session_context(
    session: Session,
    mlist: MailingList,
    post_number: int | None = None,
    should_mitigate: bool = False,
    topics: tuple[str, ...] = (),
    archivers: ArchiversSettings | None = None,
) -> TransformContext:
    """For a post that leaves outside the milter (a released hold)."""
    domain_id, base_url = session.execute(
        select(Domain.id, Domain.base_url).where(Domain.mail_host == mlist.mail_host)
    ).one()
    return context(
        mlist,
        listinfo_url=f"{base_url.rstrip('/')}/lists/{mlist.list_id}/" if base_url else "",
        templates=load_templates(session, mlist, domain_id),
        post_number=post_number,
        should_mitigate=should_mitigate,
        topics=topics,
        archivers=archivers,
    )


def own_copy_record(ctx: TransformContext) -> dict[str, object]:
    """What the outbox worker needs to make each member's own copy."""
    return ctx.own_copy_info().as_record()


def one_click(listinfo_url: str, secret_key: str) -> bool:
    """The list's members can get one-click unsubscribe links: the list has a web address
    and the site a secret to sign the links."""
    return bool(listinfo_url and secret_key)


def not_in_place(mlist: MailingList, listinfo_url: str, secret_key: str) -> bool:
    """The list's copy cannot be the post edited in place by the MTA: its members get
    their own copies, or the list is anonymous (the MTA's own Received: field, which a
    milter can neither see nor remove, names the poster's client; a copy re-injected by
    the outbox names only the loopback listener)."""
    return mlist.anonymous_list or own_copies(mlist, listinfo_url, secret_key)


def own_copies(mlist: MailingList, listinfo_url: str, secret_key: str) -> bool:
    """Each member gets its own copy (made by the outbox worker): for a one-click link, or
    because the list personalizes its posts (Mailman's ``personalize``)."""
    return one_click(listinfo_url, secret_key) or mlist.personalize is not Personalization.none


def in_place_copy(ctx: TransformContext, post: Post) -> tuple[tuple[HeaderOp, ...], bytes | None]:
    """The members' copy of ``post`` as milter edits: (header edits, new body or None).
    The header block is parsed once (the post's own parse), not once per step."""
    draft = transforms.run(ctx, post.raw, transforms.MEMBER_STEPS, post.headers, post.body_start)
    if ctx.sign is not no_signature:
        unsigned = draft.to_bytes()
        signed = ctx.sign(unsigned)
        if signed is not unsigned:  # a signature was added: read the signed header block
            return in_place_edits(post.raw, signed, draft.original, post.body_start)
    body = draft.body if draft.body_changed else None
    return header_ops(draft.original, draft.fields), body


def in_place_edits(
    original: bytes,
    copy: bytes,
    fields: list[tuple[str, str]] | None = None,
    o_end: int = -1,
) -> tuple[tuple[HeaderOp, ...], bytes | None]:
    """(header edits, new body or None) that make ``original`` into ``copy``; ``fields``,
    ``o_end``: the original's header fields and where they end, when read already."""
    if o_end < 0:
        o_end = header_end(original)
    c_end = header_end(copy)
    if fields is None:
        fields = parse_fields(original[:o_end])
    ops = header_ops(fields, parse_fields(copy[:c_end]))
    body = copy[c_end:]
    return ops, (None if body == original[o_end:] else body)


def dispose_filtered(
    session: Session,
    mlist: MailingList,
    action: FilterAction,
    post: Post,
    reason: str,
    staff: tuple[str, ...],
    now: datetime,
) -> None:
    """``forward``: the post goes to the owners; ``preserve``: it is kept in SQL (as of
    ``now``)."""
    if action is FilterAction.forward and staff:
        raw = notices.filtered_post_notice(mlist, post.from_address, post.subject, reason, post.raw)
        outbox.list_notice(session, mlist, staff, raw, now)
    elif action is FilterAction.preserve:
        session.add(
            FilteredPost(
                mailing_list_id=mlist.id,
                message_id=post.message_id,
                sender=post.from_address,
                subject=post.subject,
                reason=reason,
                raw=post.raw,
                filtered_at=now,
            )
        )
