"""no-subject: a post without a Subject: records a reason (any reason holds the post)."""

from __future__ import annotations

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Hit, PostContext

NO_SUBJECT = "no-subject"


def no_subject(ctx: PostContext) -> Hit | None:
    if ctx.post.subject.strip():
        return None
    return Hit(NO_SUBJECT, Action.defer, _("the post has no Subject:"))
