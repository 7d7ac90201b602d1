"""A member's own copy: the archive copy, then that member's unsubscribe link, decorations
(``$member``, ``$user_address`` ...) and DMARC mitigation, then the signature.

Per-member copies exist for two reasons:

- **One-click unsubscribe (RFC 8058).**  Gmail and Yahoo ask bulk senders (since
  February 2024) for a ``List-Unsubscribe`` https link that unsubscribes in one POST, with
  ``List-Unsubscribe-Post: List-Unsubscribe=One-Click``; RFC 8058 §3.1 wants that link to
  identify the member, and one copy fanned out by the MTA cannot name each member.  So a
  list whose domain has a web address (``domains.base_url``) while the site has a
  ``site.secret_key`` sends its posts through the outbox, one copy per member.
- **The list's ``personalize`` setting** (``individual``/``full``, Mailman's): footers
  that name the member.

The post goes into the outbox once, as the archive copy, with an
:class:`~mtaplugin.vocabulary.own_copy.OwnCopyInfo` record; the worker makes each member's
copy just before it goes (:func:`own_copy` in
:mod:`mtaplugin.copies.transforms`) and sends it in its own transaction.  Without a secret or a
web address, members of a list that does not personalize get the shared copy, fanned
out by the MTA: the list's unsubscribe page (when there is one) and the mailto link,
without ``List-Unsubscribe-Post`` (a one-click POST to a page that does not know who
clicked would be a lie).
"""

from __future__ import annotations

from mtaplugin.copies import unsubscribe
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.vocabulary.draft import Draft
from mtaplugin.vocabulary.own_copy import OwnCopyInfo


def member_fields(info: OwnCopyInfo, email: str, secret: str) -> list[tuple[str, str]]:
    """The unsubscribe fields of ``email``'s own copy ([] when there can be none)."""
    if not (email and secret and info.listinfo_url):
        return []
    token = unsubscribe.make_token(secret, info.list_id, email)
    url = unsubscribe.one_click_url(info.listinfo_url, token)
    return [
        ("List-Unsubscribe", f"<{url}>,\r\n <mailto:{info.leave_address}>"),
        ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
    ]


def own_unsubscribe(ctx: TransformContext, draft: Draft) -> None:
    """The member's one-click link in place of the shared unsubscribe field."""
    fields = member_fields(ctx.own_copy_info(), ctx.member, ctx.unsubscribe_secret)
    if not fields or not draft.has("List-Id"):
        return
    draft.remove("List-Unsubscribe", "List-Unsubscribe-Post")
    for name, value in fields:
        draft.append(name, value)
