"""Guard-rails for a site and its big lists (``[rules]``, all off by default).

- ``sender-rate``: the From: address offered ``sender_posts_per_hour`` posts or more in
  the last hour, all lists of the site together: 4xx, the sender's MTA tries again later.
- ``list-rate``: the list took ``list_posts_per_hour`` posts or more in the last hour: 4xx.
- ``nonmember-large-list``: the sender is not a member, owner or moderator of a list with
  more than ``nonmember_posts_max_members`` members: 5xx (a policy, not a moment).  A
  nonmember whose own moderation action is ``accept`` may still post.

The counts come from :mod:`mtaplugin.engine.rates`; a post counts when it is accepted or
held, so a refused post does not use up the sender's hour.
"""

from __future__ import annotations

from mtaplugin.enums import Action, MemberRole
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import SUBSCRIBED, Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot

SENDER_RATE = "sender-rate"
LIST_RATE = "list-rate"
NONMEMBER_LARGE_LIST = "nonmember-large-list"


def prepare_sender_rate(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off when the site sets no ``sender_posts_per_hour``."""
    return sender_rate if site.sender_posts_per_hour > 0 else None


def prepare_list_rate(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off when the site sets no ``list_posts_per_hour``."""
    return list_rate if site.list_posts_per_hour > 0 else None


def prepare_nonmember_large_list(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off when the site sets no ``nonmember_posts_max_members`` or the list is not larger."""
    limit = site.nonmember_posts_max_members
    if limit <= 0 or len(snapshot.regular) + snapshot.digest_members <= limit:
        return None
    return nonmember_large_list


def sender_rate(ctx: PostContext) -> Hit | None:
    """the From: address offered ``[rules] sender_posts_per_hour`` posts or more in the
    last hour, every list of the site together (4xx: the sender's MTA tries again)"""
    limit = ctx.site.sender_posts_per_hour
    if limit <= 0 or ctx.recent is None or ctx.recent.sender < limit:
        return None
    return Hit(
        SENDER_RATE,
        Action.reject,
        _("{sender} sent {count} posts in the last hour (the site allows {limit})").format(
            sender=ctx.sender, count=ctx.recent.sender, limit=limit
        ),
        temporary=True,
    )


def list_rate(ctx: PostContext) -> Hit | None:
    """the list took ``[rules] list_posts_per_hour`` posts or more in the last hour (4xx)"""
    limit = ctx.site.list_posts_per_hour
    if limit <= 0 or ctx.recent is None or ctx.recent.list < limit:
        return None
    return Hit(
        LIST_RATE,
        Action.reject,
        _("the list took {count} posts in the last hour (the site allows {limit})").format(
            count=ctx.recent.list, limit=limit
        ),
        temporary=True,
    )


def nonmember_large_list(ctx: PostContext) -> Hit | None:
    """the sender is not a member, owner or moderator of a list with more than
    ``[rules] nonmember_posts_max_members`` members (a nonmember whose own moderation
    action is ``accept`` still posts)"""
    limit = ctx.site.nonmember_posts_max_members
    if limit <= 0 or ctx.snapshot is None:
        return None
    roles = ctx.roles
    if not SUBSCRIBED.isdisjoint(roles):
        return None
    if roles.get(MemberRole.nonmember) is Action.accept:
        return None
    size = len(ctx.snapshot.regular) + ctx.snapshot.digest_members
    if size <= limit:
        return None
    return Hit(
        NONMEMBER_LARGE_LIST,
        Action.reject,
        _(
            "the list has {size} members; on lists of more than {limit} only members may post"
        ).format(size=size, limit=limit),
    )
