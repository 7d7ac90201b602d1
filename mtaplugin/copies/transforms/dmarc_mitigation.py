"""DMARC mitigation, the transform (Mailman's ``dmarc`` handler).

Whether a post is mitigated is decided elsewhere -- the DMARC policy of the From: domain
(``mtaplugin.mailauth.dmarc.lookup_policy``), ``dmarc_addresses``,
``dmarc_mitigate_unconditionally`` -- and arrives here as
``TransformContext.should_mitigate``; :func:`should_mitigate` combines those inputs.
``reject`` and ``discard`` are SMTP-time decisions and never reach the transforms.

- **munge_from**: ``From: "Ann Example via Team" <team@lists.example.org>``; the original
  From: goes to Reply-To when the list does not munge Reply-To (``no_munging``), else to
  Cc, so that a reply still reaches the author.
- **wrap_message**: the post goes, byte for byte, inside a new message from the list: a
  message/rfc822 part (after a text/plain part with ``dmarc_wrapped_message_text`` when the
  list has one).  The outer message keeps Date, Subject, To, Cc, In-Reply-To, References,
  Precedence and the List-* fields, and gets its own Message-ID and the munged From.

Anonymous lists are never mitigated: their From: is the list already.
"""

from __future__ import annotations

import re
import secrets
from email.utils import formataddr, getaddresses, make_msgid
from typing import TYPE_CHECKING

from mtaplugin.copies.transforms.encoding import decode_text
from mtaplugin.copies.transforms.headers import add_address
from mtaplugin.enums import DMARCMitigateAction, ReplyToMunging
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.vocabulary.draft import Draft

if TYPE_CHECKING:
    from mtaplugin.model import MailingList

TRANSFORMING = (DMARCMitigateAction.munge_from, DMARCMitigateAction.wrap_message)
#: the fields a wrapped post keeps outside (Mailman's list, plus Cc)
KEEP_OUTSIDE = re.compile(
    r"^(archived-at|date|in-reply-to|list-.*|precedence|references|subject|to|cc|x-mailman-.*)$"
)


def munged_from(mlist: MailingList, original_from: str) -> str:
    pairs = getaddresses([decode_text(original_from)])
    name, email = pairs[0] if pairs else ("", "")
    name = " ".join(name.split()) or email
    name = re.sub(r"@([^ .]+\.)+[^ .]+", "---", name)
    shown = f"{name} via {mlist.display_name}" if mlist.display_name else name
    return formataddr((shown, mlist.posting_address))


def _credit_author(ctx: TransformContext, draft: Draft, original_from: str) -> None:
    if not original_from.strip():
        return
    if ctx.mlist.reply_goes_to_list is ReplyToMunging.no_munging:
        add_address(draft, "Reply-To", original_from.strip())
    else:
        add_address(draft, "Cc", original_from.strip())


def munge_from(ctx: TransformContext, draft: Draft) -> None:
    original = draft.get("From")
    draft.set("From", munged_from(ctx.mlist, original))
    _credit_author(ctx, draft, original)


def wrap_message(ctx: TransformContext, draft: Draft) -> None:
    mlist = ctx.mlist
    inner = draft.to_bytes()
    original_from = draft.get("From")
    outside = [(k, v) for k, v in draft.fields if KEEP_OUTSIDE.match(k.lower())]
    reply_to = draft.get_all("Reply-To")
    draft.fields = outside
    draft.append("From", munged_from(mlist, original_from))
    for value in reply_to:
        draft.append("Reply-To", value)
    _credit_author(ctx, draft, original_from)
    draft.append("Message-ID", make_msgid(domain=mlist.mail_host))
    draft.append("MIME-Version", "1.0")
    cte = b"" if inner.isascii() else b"Content-Transfer-Encoding: 8bit\r\n"
    text = mlist.dmarc_wrapped_message_text.strip()
    if not text:
        draft.append("Content-Type", "message/rfc822")
        draft.append("Content-Disposition", "inline")
        if cte:
            draft.append("Content-Transfer-Encoding", "8bit")
        draft.set_body(inner)
        return
    boundary = f"==============={secrets.token_hex(12)}=="
    delim = b"--" + boundary.encode()
    data = re.sub(r"\r?\n", "\r\n", text + "\n").encode("utf-8")
    charset = b"us-ascii" if data.isascii() else b"utf-8"
    text_cte = b"7bit" if data.isascii() else b"8bit"
    body = (
        delim
        + b'\r\nContent-Type: text/plain; charset="'
        + charset
        + b'"\r\nContent-Transfer-Encoding: '
        + text_cte
        + b"\r\nContent-Disposition: inline\r\n\r\n"
        + data
        + b"\r\n"
        + delim
        + b"\r\nContent-Type: message/rfc822\r\nContent-Disposition: inline\r\n"
        + cte
        + b"\r\n"
        + inner
        + b"\r\n"
        + delim
        + b"--\r\n"
    )
    draft.append("Content-Type", f'multipart/mixed; boundary="{boundary}"')
    draft.set_body(body)


def mitigate(ctx: TransformContext, draft: Draft) -> None:
    if not ctx.should_mitigate or ctx.mlist.anonymous_list:
        return
    action = ctx.mlist.dmarc_mitigate_action
    if action is DMARCMitigateAction.munge_from:
        munge_from(ctx, draft)
    elif action is DMARCMitigateAction.wrap_message:
        wrap_message(ctx, draft)
