"""Cleanse: the headers the members never see (Mailman's ``cleanse`` handler).

Every post loses the approval headers (they may carry the moderator password), an
approval line first in its text (:mod:`mtaplugin.posting.approval_line`), the
read-receipt requests (members would answer the poster, one by one), ``Urgent:`` and the
poster's ``Archived-At``.  On an anonymous list the post also loses everything that
names the poster or the way it came: From: and Reply-To: become the list, and the trace
fields, the poster's Message-ID, the client's address and the signatures of the poster's
domain go.
"""

from __future__ import annotations

import re
from email.utils import formataddr

from mtaplugin.archive.hashing import content_message_id
from mtaplugin.posting import approval_line
from mtaplugin.posting.rules import approved
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.vocabulary.draft import Draft

#: the pre-approval headers, the rule ``approved``'s own: the members never see them (one
#: may carry the list's password)
APPROVAL_HEADERS = approved.HEADERS

#: removed from every post (Mailman 3 cleanse.py, plus the approval family)
ALWAYS_REMOVED: tuple[str, ...] = (
    *APPROVAL_HEADERS,
    "Urgent",
    "Return-Receipt-To",
    "Disposition-Notification-To",
    "X-Confirm-Reading-To",
    "X-PMRQC",
    "Archived-At",
)

_ALWAYS_REMOVED_KEYS = frozenset(name.lower() for name in ALWAYS_REMOVED)

#: removed from posts to an anonymous list: who sent it and how it came
ANONYMOUS_REMOVED: tuple[str, ...] = (
    "From",
    "Reply-To",
    "Sender",
    "Organization",
    "Return-Path",
    "Received",
    "Message-ID",
    "X-Originating-IP",
    "X-Originating-Email",
    "X-Envelope-From",
    "X-MailFrom",
    "X-Sender",
    "X-Authenticated-Sender",
    "X-Mailer",
    "User-Agent",
    "DKIM-Signature",
    "DomainKey-Signature",
    "Authentication-Results",
    "ARC-Seal",
    "ARC-Message-Signature",
    "ARC-Authentication-Results",
    "Received-SPF",
)
#: and every X-Google-*, X-MS-Exchange-* ... field that carries the poster's account
_ANONYMOUS_PATTERN = re.compile(r"^x-(google|ms-exchange|ms-office365|yahoo|apple)-")


def cleanse(ctx: TransformContext, draft: Draft) -> None:
    draft.remove_keys(_ALWAYS_REMOVED_KEYS)
    approval_line.strip(draft)
    if ctx.mlist.anonymous_list:
        anonymize(ctx, draft)


def anonymize(ctx: TransformContext, draft: Draft) -> None:
    mlist = ctx.mlist
    replaced = {
        "From": formataddr((mlist.description or mlist.display_name, mlist.posting_address)),
        "Reply-To": mlist.posting_address,
        "Message-ID": anonymous_message_id(ctx, draft),
    }
    draft.remove(*(h for h in ANONYMOUS_REMOVED if h not in replaced))
    draft.remove_matching(_ANONYMOUS_PATTERN)
    for name, value in replaced.items():
        draft.set(name, value)  # where the poster's was, if there was one


def anonymous_message_id(ctx: TransformContext, draft: Draft) -> str:
    """The Message-ID of an anonymous list's post: made from what the members see anyway
    (Subject, the body) and the poster's Message-ID, which they do not, with the list's
    name -- never from the poster's address.  The same post gets the same one in every
    copy of it (the members' copy, the digest, the archive and its ``Archived-At``), and
    in a sender's retry of it: the Date counts only when the post has no Message-ID, since
    an MTA adds a Date of its own to each attempt of a post that had none (the archive
    then keeps the retry once, by this Message-ID).  One made already is kept (the steps
    may run on their own result)."""
    current = draft.get("Message-ID").strip()
    if current.startswith("<anon.") and current.endswith(f"@{ctx.mlist.mail_host}>"):
        return current
    fields = [*draft.fields, ("X-List", ctx.mlist.list_id)]
    wanted = frozenset(
        {"subject", "message-id", "x-list"} if current else {"date", "subject", "x-list"}
    )
    made = content_message_id(fields, draft.body, ctx.mlist.mail_host, wanted)
    return made.replace("<archive.", "<anon.", 1)
