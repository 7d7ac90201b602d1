"""approved and moderator-password: a post a moderator pre-approved goes to the members
without moderation.

Two rules, at two places in the table:

1. ``approved`` (early, cheap): an owner or moderator of the list whose From: address is
   authenticated (aligned DKIM/SPF/DMARC from a trusted verifier or our own checks, or
   SMTP AUTH; see :mod:`mtaplugin.mailauth.identity`) adds an ``Approved:`` header (any
   value, e.g. ``Approved: yes``).  No shared secret travels in the message.
2. ``moderator-password`` (after bans, header matches, the rate limits and the
   large-list guard, so that those refuse a stranger before any password is hashed):
   compatibility with Mailman, when the list has a ``moderator_password``, the **first**
   non-empty ``Approved:``/``Approve:``/``X-Approved:``/``X-Approve:`` value carrying that
   password approves the post from anyone.  Only that one value is checked, at most once
   per post (:mod:`mtaplugin.posting.moderator_password`); a wrong password does not
   approve (nor refuse).

Without an approval header, both read the first non-blank line of the post's text
(``Approved: <password>``, as Mailman 2.1 and 3 do; see
:mod:`mtaplugin.posting.approval_line`).  The headers, and that line, are removed before
the members get the post, whatever the outcome.
"""

from __future__ import annotations

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting import approval_line
from mtaplugin.posting import moderator_password as password
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.vocabulary.header_block import header_end

APPROVED = "approved"
MODERATOR_PASSWORD = "moderator-password"
HEADERS = approval_line.HEADERS


def approval_value(ctx: PostContext) -> str:
    """The first non-empty value of the approval headers; without one, the value of an
    approval line first in the post's text ("" when there is neither)."""
    post = ctx.post
    fields = [(k, str(v)) for k, v in post.headers.raw_items()]
    value = password.first_value(fields, HEADERS)
    if value:
        return value
    body = post.raw[header_end(post.raw) :]
    return approval_line.body_value([(k, str(v)) for k, v in fields], body, lambda: post.message)


def approved(ctx: PostContext) -> Hit | None:
    """an owner or moderator whose From: is authenticated adds ``Approved:`` (any value)"""
    if not (ctx.is_staff and ctx.identity.authenticated) or not approval_value(ctx):
        return None
    return Hit(
        APPROVED,
        Action.accept,
        _("pre-approved by {sender} ({how})").format(
            sender=ctx.sender, how=", ".join(ctx.identity.signals)
        ),
    )


def prepare_moderator_password(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off when the list has no ``moderator_password``."""
    return moderator_password if snapshot.mlist.moderator_password else None


def moderator_password(ctx: PostContext) -> Hit | None:
    """the first approval header carries the list's ``moderator_password`` (checked once
    per post)"""
    hashed = ctx.mlist.moderator_password
    if not hashed:
        return None  # no password: the rule is off, nothing is hashed
    value = approval_value(ctx)
    if value and password.matches(ctx.post.raw, value, hashed, ctx.mlist.fqdn_listname):
        return Hit(MODERATOR_PASSWORD, Action.accept, _("approved with the list's password"))
    return None
