"""Helpers for the transform tests: a list with Mailman's defaults, the corpus."""

from __future__ import annotations

import email
from email.message import Message
from email.policy import compat32
from pathlib import Path
from typing import Any

from mtaplugin.model import MailingList
from mtaplugin.posting.transform_context import TransformContext
from tests.helpers import detached_list

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def make_list(**settings: Any) -> MailingList:
    """A MailingList (not in any session) with every column at its default."""
    values: dict[str, Any] = {
        "list_name": "team",
        "mail_host": "lists.example.org",
        "list_id": "team.lists.example.org",
        "display_name": "Team",
        "subject_prefix": "[Team] ",
    }
    return detached_list(**{**values, **settings})


def context(**kwargs: Any) -> TransformContext:
    settings = kwargs.pop("settings", {})
    return TransformContext(make_list(**settings), **kwargs)


def corpus(name: str) -> bytes:
    return (CORPUS / name).read_bytes()


def corpus_names() -> list[str]:
    return sorted(p.name for p in CORPUS.glob("*.eml"))


def parse(raw: bytes) -> Message:
    return email.message_from_bytes(raw, policy=compat32)


def big_attachment(mib: int = 2) -> bytes:
    """A post with a ``mib`` MiB attachment (made here rather than kept in git)."""
    import base64

    data = base64.encodebytes(bytes(range(256)) * 4096 * mib).replace(b"\n", b"\r\n")
    head = (
        b"From: jay@example.com\r\nTo: team@lists.example.org\r\nSubject: big attachment\r\n"
        b"Message-ID: <big@example.com>\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="big-b"\r\n\r\n'
        b"--big-b\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\nA big file follows.\r\n"
        b'--big-b\r\nContent-Type: application/octet-stream; name="data.bin"\r\n'
        b'Content-Disposition: attachment; filename="data.bin"\r\n'
        b"Content-Transfer-Encoding: base64\r\n\r\n"
    )
    return head + data + b"--big-b--\r\n"


def all_posts() -> dict[str, bytes]:
    posts = {name: corpus(name) for name in corpus_names()}
    posts["big-attachment (generated)"] = big_attachment()
    return posts


def text_of(raw: bytes) -> str:
    """Every text part of a message, decoded and joined."""
    out = []
    for part in parse(raw).walk():
        if part.get_content_maintype() != "text" or part.is_multipart():
            continue
        data = part.get_payload(decode=True)
        if isinstance(data, bytes):
            try:
                out.append(data.decode(part.get_content_charset() or "utf-8", "replace"))
            except LookupError:  # a charset Python does not know
                out.append(data.decode("utf-8", "replace"))
    return "\n".join(out)
