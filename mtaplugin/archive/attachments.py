"""An archived post's attachments, as the archive serves them: found again in the stored
message, named safely, and typed so that nothing is ever rendered or run by the browser.

Every attachment is served with ``Content-Disposition: attachment`` (a download), under
``X-Content-Type-Options: nosniff`` and a sandboxing Content-Security-Policy.  Only images
of four plain raster types whose first bytes match (PNG, JPEG, GIF, WebP) keep their type,
so that the post's page may show them in an ``<img>``; everything else (SVG and HTML
included) is served as ``application/octet-stream``.
"""

from __future__ import annotations

import email
import unicodedata
from dataclasses import dataclass
from email.message import Message
from typing import Any
from urllib.parse import quote

from mtaplugin.model import ArchivedMessage

#: the image types shown inline, with the first bytes a real one starts with
SAFE_IMAGES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
OCTET_STREAM = "application/octet-stream"


@dataclass(frozen=True)
class Attachment:
    number: int
    name: str
    content_type: str
    size: int

    @property
    def is_image(self) -> bool:
        return self.content_type in SAFE_IMAGES


@dataclass(frozen=True)
class Download:
    name: str
    content_type: str
    data: bytes


def safe_name(name: str, fallback: str) -> str:
    """A file name without paths, control characters or quotes (``fallback`` if empty)."""
    name = unicodedata.normalize("NFC", name).replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(
        ch for ch in name if unicodedata.category(ch)[0] != "C" and ch not in "\"'<>:|?*;"
    )
    cleaned = cleaned.strip(" .")[:200]
    return cleaned or fallback


def content_disposition(name: str) -> str:
    """``attachment`` with the name in ASCII and in UTF-8 (RFC 6266, RFC 8187)."""
    ascii_name = name.encode("ascii", "replace").decode().replace("?", "_")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


def listed(message: ArchivedMessage) -> list[Attachment]:
    """The attachments as the archive store listed them (odd entries left out), numbered
    from 1 in that order."""
    out = []
    entries = message.attachments if isinstance(message.attachments, list) else []
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            continue
        name = safe_name(str(entry.get("name") or ""), f"attachment-{n}")
        ctype = str(entry.get("content_type") or OCTET_STREAM).lower()
        size = entry.get("size")
        out.append(Attachment(n, name, ctype, size if isinstance(size, int) else 0))
    return out


def _part(msg: Message, entry: dict[str, Any]) -> Message | None:
    parts = list(msg.walk())
    index = entry.get("part")
    if isinstance(index, int) and 0 <= index < len(parts) and not parts[index].is_multipart():
        return parts[index]
    name = entry.get("name")
    for part in parts:
        if not part.is_multipart() and name and part.get_filename() == name:
            return part
    return None


def download(message: ArchivedMessage, number: int) -> Download | None:
    """Attachment ``number`` (from 1) of the post, read from the stored message; None when
    there is no such attachment."""
    entries = message.attachments if isinstance(message.attachments, list) else []
    if not 1 <= number <= len(entries) or not isinstance(entries[number - 1], dict):
        return None
    entry = entries[number - 1]
    try:
        part = _part(email.message_from_bytes(message.raw), entry)
        data = part.get_payload(decode=True) if part is not None else None
    except Exception:  # broken MIME: no attachment rather than an error page
        return None
    if not isinstance(data, bytes):
        return None
    name = safe_name(str(entry.get("name") or ""), f"attachment-{number}")
    declared = str(entry.get("content_type") or "").lower()
    return Download(name, declared if is_safe_image(declared, data) else OCTET_STREAM, data)


def is_safe_image(content_type: str, data: bytes) -> bool:
    """Whether ``data`` is an image of a type shown inline, by its first bytes too."""
    magic = SAFE_IMAGES.get(content_type)
    if magic is None or not data.startswith(magic):
        return False
    return content_type != "image/webp" or data[8:12] == b"WEBP"
