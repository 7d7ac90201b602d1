"""Small helpers shared by the tests."""

from __future__ import annotations

import itertools
from email.message import EmailMessage
from email.utils import make_msgid

_n = itertools.count(1)


def unique(prefix: str = "list") -> str:
    return f"{prefix}{next(_n)}"


def make_post(
    sender: str,
    to: str,
    subject: str = "hello",
    body: str = "Hello, list.\n",
    headers: dict[str, str] | None = None,
) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = make_msgid(domain="client.test")
    for name, value in (headers or {}).items():
        msg[name] = value
    msg.set_content(body)
    return msg.as_bytes()
