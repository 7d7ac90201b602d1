"""Decorate: the list's header and footer texts around the post (Mailman's ``decorate``).

The templates are Mailman's ``list:member:regular:header`` and ``...:footer`` with its
``$variables`` (:func:`variables`); the built-in footer is Mailman's.  Where they go:

- **text/plain** (not an attachment): inline, in the post's own text.  The text is decoded
  with its charset and transfer encoding, decorated, and encoded again -- in its charset
  when that can hold the decoration, else in UTF-8 -- with the same transfer encoding
  (``7bit`` becomes ``8bit`` when the text is no longer ASCII).
- **multipart/mixed**: a text/plain part before the first part and one after the last.
- **anything else** (multipart/alternative, multipart/signed, text/html, an image ...):
  the post is wrapped in a new multipart/mixed with the header part, the post, and the
  footer part.  The post goes in byte for byte: a multipart/signed part stays verifiable.

Everything works on the bytes of the body: no MIME tree is built, so decorating a post
with a large attachment costs a search for its boundary.
"""

from __future__ import annotations

import functools
import quopri
import re
import secrets
from email.message import Message
from email.policy import compat32
from string import Template
from typing import TYPE_CHECKING

from mtaplugin.posting.transfer import decode_body, encode_body
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.vocabulary.context import DEFAULT_FOOTER, DEFAULT_HEADER, Templates
from mtaplugin.vocabulary.draft import Draft
from mtaplugin.vocabulary.header_block import content_kind

if TYPE_CHECKING:
    from mtaplugin.model import MailingList


def variables(ctx: TransformContext) -> dict[str, str]:
    """Mailman's template variables (MM3 names, and the MM2 ``real_name``)."""
    mlist = ctx.mlist
    member = ctx.member
    name = ctx.member_name
    return {
        "display_name": mlist.display_name,
        "real_name": mlist.display_name,
        "listname": mlist.fqdn_listname,
        "fqdn_listname": mlist.fqdn_listname,
        "list_name": mlist.list_name,
        "short_listname": mlist.list_name,
        "list_id": mlist.list_id,
        "domain": mlist.mail_host,
        "mail_host": mlist.mail_host,
        "posting_address": mlist.posting_address,
        "request_email": mlist.request_address,
        "request_address": mlist.request_address,
        "owner_email": mlist.owner_address,
        "description": mlist.description,
        "info": mlist.info,
        "language": mlist.preferred_language,
        "listinfo_uri": ctx.listinfo_url,
        "listinfo_url": ctx.listinfo_url,
        "member": member,
        "user_email": member,
        "user_address": member,
        "user_delivered_to": member,
        "user_name": name,
        "user_name_or_email": name or member,
        "user_language": (ctx.member_language or mlist.preferred_language) if member else "",
        "user_optionsurl": f"{ctx.listinfo_url}options" if member and ctx.listinfo_url else "",
    }


def render(template: str, ctx: TransformContext) -> str:
    text = Template(template).safe_substitute(variables(ctx))
    return text.strip("\n")


def texts(ctx: TransformContext) -> tuple[str, str]:
    """(header, footer) as the members read them; "" for none."""
    if ctx.member:
        return _texts(ctx)
    if ctx.prepared is not None:  # made once for the list version
        return ctx.prepared.texts
    # The shared copy's texts depend on the list snapshot alone: made once per snapshot.
    return _shared_texts(ctx.mlist, ctx.templates, ctx.listinfo_url)


@functools.lru_cache(maxsize=1024)
def _shared_texts(mlist: MailingList, templates: Templates, listinfo_url: str) -> tuple[str, str]:
    return _texts(TransformContext(mlist, listinfo_url=listinfo_url, templates=templates))


def _texts(ctx: TransformContext) -> tuple[str, str]:
    t = ctx.templates
    header = render(DEFAULT_HEADER if t.header is None else t.header, ctx)
    footer = render(DEFAULT_FOOTER if t.footer is None else t.footer, ctx)
    return header, footer


def decorate(ctx: TransformContext, draft: Draft) -> None:
    header, footer = texts(ctx)
    if not header and not footer:
        return
    mtype, charset = content_kind(draft.get("Content-Type"))
    disposition = draft.get("Content-Disposition").split(";")[0].strip().lower()
    inline = mtype == "text/plain" and disposition != "attachment"
    if inline and _inline(draft, charset, header, footer):
        return
    if mtype == "multipart/mixed" and _add_parts(draft, _content_type(draft), header, footer):
        return
    _wrap(draft, header, footer)


def _content_type(draft: Draft) -> Message:
    holder = Message(policy=compat32)
    value = draft.get("Content-Type")
    if value:
        holder["Content-Type"] = value
    return holder


def _join(header: str, text: str, footer: str) -> str:
    if footer and text and not text.endswith(("\n", "\r\n")):
        text += "\n"
    out = (header + "\n" if header else "") + text + (footer + "\n" if footer else "")
    # every line end CRLF (as re.sub(r"\r?\n", "\r\n") makes them, without the regex)
    return out.replace("\r\n", "\n").replace("\n", "\r\n")


def _inline(draft: Draft, declared: str | None, header: str, footer: str) -> bool:
    cte = draft.get("Content-Transfer-Encoding").strip().lower()
    data = decode_body(draft.body, cte)
    if data is None:
        return False
    charset = (declared or "us-ascii").lower()
    try:
        text = data.decode(charset)
    except (LookupError, UnicodeDecodeError):
        return False
    decorated = _join(header, text, footer)
    try:
        encoded = decorated.encode(charset)
    except UnicodeEncodeError:
        charset = "utf-8"
        encoded = decorated.encode(charset)
    body, new_cte = encode_body(encoded, cte)
    if charset != (declared or "us-ascii").lower():
        ctype = _content_type(draft)
        if not draft.has("Content-Type") or not isinstance(ctype["Content-Type"], str):
            # none, or one with 8-bit bytes (read as a Header object): plain text, the
            # default RFC 2045 gives a part without a Content-Type it can read
            del ctype["Content-Type"]
            ctype["Content-Type"] = "text/plain"
        ctype.set_param("charset", charset)
        draft.set("Content-Type", str(ctype["Content-Type"]))
        if not draft.has("MIME-Version"):
            draft.append("MIME-Version", "1.0")
    if new_cte != cte:
        draft.set("Content-Transfer-Encoding", new_cte)
    draft.set_body(body)
    return True


def _text_part(text: str) -> bytes:
    if text.isascii():
        head = b'Content-Type: text/plain; charset="us-ascii"\r\nContent-Transfer-Encoding: 7bit'
        data = re.sub(r"\r?\n", "\r\n", text + "\n").encode("ascii")
    else:
        head = (
            b'Content-Type: text/plain; charset="utf-8"\r\n'
            b"Content-Transfer-Encoding: quoted-printable"
        )
        data = quopri.encodestring((text + "\n").encode("utf-8")).replace(b"\n", b"\r\n")
    return head + b"\r\nContent-Disposition: inline\r\n\r\n" + data


def _first_delimiter(body: bytes, delim: bytes) -> int:
    """Where the first ``--boundary`` line starts (-1: none)."""
    at = body.find(delim)
    while at >= 0:
        line_end = body.find(b"\n", at)
        rest = body[at + len(delim) : line_end if line_end >= 0 else len(body)]
        if (at == 0 or body[at - 1 : at] == b"\n") and not rest.strip():
            return at
        at = body.find(delim, at + 1)
    return -1


def _add_parts(draft: Draft, ctype: Message, header: str, footer: str) -> bool:
    boundary = ctype.get_boundary()
    if not boundary:
        return False
    # (an 8-bit boundary comes back from the parser as text: its UTF-8 bytes, or none)
    delim = b"--" + boundary.encode("utf-8", "surrogateescape")
    body = draft.body
    first = _first_delimiter(body, delim)
    close = body.rfind(b"\n" + delim + b"--")
    if first < 0 or close < first:
        return False
    if close > 0 and body[close - 1 : close] == b"\r":
        close -= 1  # the CRLF before a delimiter belongs to it
    out = body
    if footer:
        out = out[:close] + b"\r\n" + delim + b"\r\n" + _text_part(footer) + out[close:]
    if header:
        out = out[:first] + delim + b"\r\n" + _text_part(header) + b"\r\n" + out[first:]
    draft.set_body(out)
    return True


def _wrap(draft: Draft, header: str, footer: str) -> None:
    content = [(k, v) for k, v in draft.fields if k.lower().startswith("content-")]
    draft.remove(*{k for k, _v in content})
    boundary = f"==============={secrets.token_hex(12)}=="
    delim = b"--" + boundary.encode()
    inner = b"".join(f"{k}: {v}\r\n".encode("ascii", "surrogateescape") for k, v in content)
    inner = re.sub(rb"\r?\n", b"\r\n", inner)
    parts = []
    if header:
        parts.append(_text_part(header))
    parts.append(inner + b"\r\n" + draft.body)
    if footer:
        parts.append(_text_part(footer))
    body = b"".join(delim + b"\r\n" + p + b"\r\n" for p in parts) + delim + b"--\r\n"
    if not draft.has("MIME-Version"):
        draft.append("MIME-Version", "1.0")
    draft.append("Content-Type", f'multipart/mixed; boundary="{boundary}"')
    draft.set_body(body)
