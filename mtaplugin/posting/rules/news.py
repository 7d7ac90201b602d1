"""news-moderation: the list gateways to a moderated newsgroup (``newsgroup_moderation``
``moderated``), so every post waits for a moderator (Mailman 2.1's ``ModeratedNewsgroup``
hold).  Articles gated from the group to the list are not held again: the group's
moderation let them in.  Posts a moderator lets through reach the group with the
``Approved:`` header the news server needs (:func:`mtaplugin.news.moderation.approved_by`)."""

from __future__ import annotations

from mtaplugin.enums import Action, NewsgroupModeration
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot

NEWS_MODERATION = "news-moderation"


def prepare(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off unless the list gateways to a moderated newsgroup."""
    mlist = snapshot.mlist
    on = (
        mlist.newsgroup_moderation is NewsgroupModeration.moderated
        and mlist.gateway_to_news
        and mlist.linked_newsgroup
    )
    return news_moderation if on else None


def news_moderation(ctx: PostContext) -> Hit | None:
    mlist = ctx.mlist
    if mlist.newsgroup_moderation is not NewsgroupModeration.moderated:
        return None
    if not (mlist.gateway_to_news and mlist.linked_newsgroup):
        return None
    if ctx.envelope.gated_from:
        # An article of the group: the group's moderation let it in already.
        return None
    return Hit(
        NEWS_MODERATION,
        Action.hold,
        _("posts to {list} go to the moderated newsgroup {group}").format(
            list=mlist.fqdn_listname, group=mlist.linked_newsgroup
        ),
    )
