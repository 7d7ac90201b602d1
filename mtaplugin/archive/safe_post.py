"""A held post shown to a moderator without risk.

Text parts are shown as text (the template escapes them); HTML parts go through nh3 (an
allow-list sanitiser: no scripts, styles, event handlers, forms or remote images, links get
``rel="noopener noreferrer nofollow"``); every other part is listed by name, type and size
and never served.  The page's CSP (``default-src 'self'``) is a second fence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage

import nh3

SHOWN_HEADERS = ("From", "To", "Cc", "Subject", "Date", "Message-ID", "Reply-To")
_TAGS = nh3.ALLOWED_TAGS - {"img"}
_MAX_TEXT = 200_000


@dataclass
class Attachment:
    filename: str
    content_type: str
    size: int


@dataclass
class RenderedPost:
    headers: list[tuple[str, str]] = field(default_factory=list)
    #: ("text", str) or ("html", sanitised markup)
    bodies: list[tuple[str, str]] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)


def sanitize_html(html: str) -> str:
    return nh3.clean(
        html[:_MAX_TEXT],
        tags=_TAGS,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def _text_of(part: EmailMessage) -> str:
    try:
        content = part.get_content()
    except (LookupError, ValueError, AssertionError):
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    return content if isinstance(content, str) else ""


def render_post(raw: bytes) -> RenderedPost:
    msg = message_from_bytes(raw, policy=policy.default)
    assert isinstance(msg, EmailMessage)
    out = RenderedPost()
    for name in SHOWN_HEADERS:
        value = msg.get(name)
        if value is not None:
            out.headers.append((name, str(value)))
    for part in msg.walk():
        if part.is_multipart():
            continue
        ctype = part.get_content_type()
        disposition = part.get_content_disposition()
        filename = part.get_filename()
        if disposition != "attachment" and not filename and ctype in ("text/plain", "text/html"):
            text = _text_of(part)
            if ctype == "text/html":
                out.bodies.append(("html", sanitize_html(text)))
            else:
                out.bodies.append(("text", text[:_MAX_TEXT]))
            continue
        payload = part.get_payload(decode=True)
        out.attachments.append(
            Attachment(
                filename=filename or "",
                content_type=ctype,
                size=len(payload) if isinstance(payload, bytes) else 0,
            )
        )
    return out
