"""What an accepted post becomes before the members get it.

One place for every way a post reaches the members -- the milter's in-place edit, the
outbox copy of a mixed transaction or of a large list, a released hold -- so that they get
the same thing: :func:`members_copy`, i.e. the sequence of :mod:`mtaplugin.transforms`.

- :func:`context` gathers what the transforms read for one list and one post.
- :func:`in_place_edits` turns the members' copy into the milter's header edits (and a new
  body only when the body changed), so that Postfix can fan the post out itself.
- :func:`one_click` says whether a list's members get their own copies (one-click
  unsubscribe links need them; see :mod:`mtaplugin.transforms.personalize`).
- :func:`dispose_filtered` does a list's ``filter_action`` forward/preserve when content
  filtering keeps the whole post from the members.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbound, transforms
from mtaplugin.message import Post, header_end
from mtaplugin.model import Domain, FilteredPost, MailingList
from mtaplugin.model.enums import FilterAction
from mtaplugin.snapshot import ListSnapshot, load_templates
from mtaplugin.transforms import Templates, TransformContext, no_signature
from mtaplugin.transforms.cleanse import APPROVAL_HEADERS
from mtaplugin.transforms.draft import HeaderOp, header_ops, parse_fields
from mtaplugin.transforms.personalize import Personalization

#: headers the members never see (the approval, which may carry a password); the rest of
#: what is removed is in :mod:`mtaplugin.transforms.cleanse`
REMOVED_HEADERS = APPROVAL_HEADERS

Signer = Callable[[MailingList, bytes], bytes]


def no_signer(mlist: MailingList, raw: bytes) -> bytes:
    return raw


def headers_to_remove(post: Post) -> tuple[str, ...]:
    """Of :data:`REMOVED_HEADERS`, those ``post`` has."""
    return tuple(h for h in REMOVED_HEADERS if post.get_all(h))


def context(
    mlist: MailingList,
    *,
    listinfo_url: str = "",
    templates: Templates | None = None,
    post_number: int | None = None,
    should_mitigate: bool = False,
    sign: Signer = no_signer,
) -> TransformContext:
    return TransformContext(
        mlist=mlist,
        listinfo_url=listinfo_url,
        post_number=mlist.post_id if post_number is None else post_number,
        templates=templates or Templates(),
        should_mitigate=should_mitigate,
        sign=(lambda raw: sign(mlist, raw)) if sign is not no_signer else no_signature,
    )


def snapshot_context(
    snap: ListSnapshot, post_number: int | None = None, **kwargs: object
) -> TransformContext:
    return context(
        snap.mlist,
        listinfo_url=snap.listinfo_url,
        templates=snap.templates,
        post_number=post_number,
        **kwargs,  # type: ignore[arg-type]
    )


def session_context(
    session: Session,
    mlist: MailingList,
    post_number: int | None = None,
    should_mitigate: bool = False,
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
    )


def members_copy(ctx: TransformContext, raw: bytes) -> bytes:
    """The bytes the members of ``ctx.mlist`` get for the post ``raw``."""
    return transforms.members_copy(ctx, raw)


def personalization(ctx: TransformContext) -> dict[str, str] | None:
    """What the outbox worker needs to give each member its own one-click link; None when
    the list has no web address (then every member gets the same copy)."""
    if not ctx.listinfo_url:
        return None
    return Personalization(ctx.mlist.list_id, ctx.listinfo_url, ctx.mlist.leave_address).as_record()


def one_click(listinfo_url: str, secret_key: str) -> bool:
    """Members get their own copies (through the outbox) with a one-click unsubscribe
    link: the list has a web address and the site a secret to sign the links."""
    return bool(listinfo_url and secret_key)


def in_place_edits(original: bytes, copy: bytes) -> tuple[tuple[HeaderOp, ...], bytes | None]:
    """(header edits, new body or None) that make ``original`` into ``copy``."""
    o_end = header_end(original)
    c_end = header_end(copy)
    ops = header_ops(parse_fields(original[:o_end]), parse_fields(copy[:c_end]))
    body = copy[c_end:]
    return ops, (None if body == original[o_end:] else body)


def dispose_filtered(
    session: Session,
    mlist: MailingList,
    action: FilterAction,
    post: Post,
    reason: str,
    staff: tuple[str, ...],
) -> None:
    """``forward``: the post goes to the owners; ``preserve``: it is kept in SQL."""
    if action is FilterAction.forward and staff:
        outbound.enqueue(
            session,
            mlist.bounces_address,
            list(staff),
            notices.filtered_post_notice(mlist, post.from_address, post.subject, reason, post.raw),
            kind="notice",
            mailing_list_id=mlist.id,
        )
    elif action is FilterAction.preserve:
        session.add(
            FilteredPost(
                mailing_list_id=mlist.id,
                message_id=post.message_id,
                sender=post.from_address,
                subject=post.subject,
                reason=reason,
                raw=post.raw,
            )
        )
