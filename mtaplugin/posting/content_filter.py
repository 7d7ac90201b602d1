"""Content filtering (Mailman's ``mime-delete``), when the list sets ``filter_content``.

In order, on the MIME tree:

1. The post as a whole: a content type in ``filter_types`` (``text/html`` or just
   ``image``), or not in a non-empty ``pass_types``, or a file name whose extension is in
   ``filter_extensions`` (or not in a non-empty ``pass_extensions``), filters out the whole
   post.
2. Each part, recursively: parts that match the same tests are removed; a multipart left
   with no parts goes too.  Multipart containers themselves are never judged by
   ``pass_types`` (Mailman wants ``multipart`` listed there; mtaplugin does not).
3. ``collapse_alternatives``: a multipart/alternative becomes its first alternative.
4. A multipart with one part left becomes that part.
5. ``convert_html_to_plaintext``: text/html parts become text/plain (html2text).
6. A post with nothing left is filtered out.

A post filtered out as a whole gets the list's ``filter_action``, decided while the SMTP
client still waits (:func:`screen`): ``reject`` is a 5xx naming rule ``content-filter``,
``discard`` drops it, ``forward`` sends it to the list's owners, ``preserve`` keeps it in
the ``filtered_posts`` table for the site admin.  A post that keeps something goes to the
members without the filtered parts, with ``X-Content-Filtered-By: mtaplugin``.
"""

from __future__ import annotations

import os
from email.message import Message
from email.policy import compat32
from typing import TYPE_CHECKING, cast

from mtaplugin.i18n import _
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.vocabulary.draft import Draft, flatten

if TYPE_CHECKING:
    from mtaplugin.model import MailingList

RULE = "content-filter"


class FilteredOut(Exception):
    """Nothing of the post may go to the members; the reason is for the poster."""


def _matches(ctype: str, types: set[str]) -> bool:
    return ctype in types or ctype.split("/")[0] in types


def _extension(part: Message) -> str:
    name = part.get_filename() or ""
    return os.path.splitext(str(name))[1].lstrip(".").lower()


class _Rules:
    def __init__(self, mlist: MailingList) -> None:
        self.filter_types = {t.strip().lower() for t in mlist.filter_types if t.strip()}
        self.pass_types = {t.strip().lower() for t in mlist.pass_types if t.strip()}
        self.filter_ext = {e.strip().lstrip(".").lower() for e in mlist.filter_extensions}
        self.pass_ext = {e.strip().lstrip(".").lower() for e in mlist.pass_extensions}
        self.filter_ext.discard("")
        self.pass_ext.discard("")

    def refuses(self, part: Message) -> str | None:
        """Why ``part`` must go, or None."""
        ctype = part.get_content_type()
        if _matches(ctype, self.filter_types):
            return _("the content type {type} is filtered").format(type=ctype)
        if self.pass_types and not part.is_multipart() and not _matches(ctype, self.pass_types):
            return _("the content type {type} is not allowed").format(type=ctype)
        ext = _extension(part)
        if ext and ext in self.filter_ext:
            return _("files ending in .{ext} are filtered").format(ext=ext)
        if self.pass_ext and part.get_filename() and ext not in self.pass_ext:
            return _("files ending in .{ext} are not allowed").format(ext=ext or "")
        return None


def _parts(msg: Message) -> list[Message] | None:
    """The parts of a multipart ``msg`` (None for a leaf).  The parser makes every part of
    a multipart a Message; typeshed's ``get_payload`` allows strings too."""
    payload = msg.get_payload()
    if not isinstance(payload, list):
        return None
    return cast(list[Message], payload)


def _filter_parts(rules: _Rules, msg: Message) -> bool:
    """Remove the refused parts below ``msg``; True when something was removed."""
    payload = _parts(msg)
    if payload is None:
        return False
    kept: list[Message | str] = []
    changed = False
    for part in payload:
        if rules.refuses(part):
            changed = True
            continue
        if part.is_multipart() and part.get_content_maintype() == "multipart":
            changed = _filter_parts(rules, part) or changed
            if not part.get_payload():
                changed = True
                continue
        kept.append(part)
    msg.set_payload(kept)
    return changed


def _collapse_alternatives(msg: Message) -> Message:
    if msg.get_content_type() == "multipart/alternative":
        parts = _parts(msg)
        if parts:
            return _collapse_alternatives(parts[0])
        return msg
    if msg.get_content_maintype() == "multipart":
        parts = _parts(msg)
        if parts is not None:
            msg.set_payload([_collapse_alternatives(p) for p in parts])
    return msg


def _recast(msg: Message) -> Message:
    """A multipart with a single part becomes that part (recursively)."""
    if msg.get_content_maintype() != "multipart":
        return msg
    parts = _parts(msg)
    if parts is None:
        return msg
    recast = [_recast(p) for p in parts]
    if len(recast) == 1 and msg.get_content_type() != "multipart/signed":
        return recast[0]
    msg.set_payload([*recast])
    return msg


def html_to_text(html: str) -> str:
    import html2text

    converter = html2text.HTML2Text()
    converter.body_width = 72
    converter.ignore_images = True
    converter.unicode_snob = True
    return converter.handle(html)


def _to_plaintext(msg: Message) -> bool:
    changed = False
    for part in msg.walk():
        if part.get_content_type() != "text/html" or part.is_multipart():
            continue
        raw = part.get_payload(decode=True)
        if not isinstance(raw, bytes):
            continue
        charset = part.get_content_charset() or "utf-8"
        try:
            html = raw.decode(charset, errors="replace")
        except LookupError:
            html = raw.decode("utf-8", errors="replace")
        text = html_to_text(html)
        del part["Content-Transfer-Encoding"]
        part.set_payload(text.encode("utf-8"))
        part.set_type("text/plain")
        part.set_param("charset", "utf-8")
        _encode_utf8(part)
        changed = True
    return changed


def _encode_utf8(part: Message) -> None:
    import email.encoders

    payload = part.get_payload()
    data = payload if isinstance(payload, bytes) else str(payload).encode("utf-8")
    part.set_payload(data)
    if data.isascii():
        part["Content-Transfer-Encoding"] = "7bit"
        part.set_payload(data.decode("ascii"))
    else:
        email.encoders.encode_quopri(part)


def _graft(top: Message, new: Message) -> Message:
    """``new`` (a part of ``top`` that replaces it) with ``top``'s other header fields."""
    if new is top:
        return top
    for name in [k for k in top if k.lower().startswith("content-")]:
        del top[name]
    for name, value in new.items():
        if name.lower().startswith("content-"):
            top[name] = value
    top.set_payload(new.get_payload())
    return top


def filter_message(mlist: MailingList, msg: Message) -> tuple[Message, bool]:
    """(the filtered post, whether anything changed); raises :class:`FilteredOut`."""
    rules = _Rules(mlist)
    reason = rules.refuses(msg)
    if reason:
        raise FilteredOut(reason)
    changed = _filter_parts(rules, msg)
    if msg.is_multipart() and not msg.get_payload():
        raise FilteredOut(_("nothing was left after content filtering"))
    before = flatten(msg, compat32) if mlist.collapse_alternatives else b""
    result = msg
    if mlist.collapse_alternatives:
        result = _graft(msg, _collapse_alternatives(msg))
        changed = changed or flatten(result, compat32) != before
    if changed:
        result = _graft(result, _recast(result))
    if mlist.convert_html_to_plaintext:
        changed = _to_plaintext(result) or changed
    if changed:
        result["X-Content-Filtered-By"] = "mtaplugin"
    return result, changed


def screen(mlist: MailingList, raw: bytes) -> str | None:
    """Why the whole post is filtered out (the list's ``filter_action`` applies), or None.
    Decided at end of DATA, before the SMTP reply."""
    if not mlist.filter_content:
        return None
    try:
        # the header block as the MTA (and the transforms) read it, not as Python's
        # parser would: a bare CR must not hide a Content-Type from this decision
        filter_message(mlist, Draft.from_bytes(raw).tree())
    except FilteredOut as exc:
        return str(exc)
    return None


def content_filter(ctx: TransformContext, draft: Draft) -> None:
    if not ctx.mlist.filter_content:
        return
    msg, changed = filter_message(ctx.mlist, draft.tree())
    if changed:
        draft.set_tree(msg)
