"""A post written on the archive's pages: a reply to an archived post, or a new thread.

Pure code: the form's defaults (``Re:`` subject, the quoted text) and the message itself,
as a mailer would write it -- ``From:`` the poster, ``To:`` the list's posting address, a
new ``Message-ID`` in the list's domain, and for a reply ``In-Reply-To`` and
``References`` (RFC 5322 3.6.4: the parent's References, or else its In-Reply-To, then
the parent's Message-ID), so that the archive threads it under its parent.  Submitting it
is :mod:`mtaplugin.web.submit`'s.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP, SMTPUTF8
from email.utils import format_datetime

from mtaplugin.archive.threads import thread_subject

#: the longest subject and body the form takes
MAX_SUBJECT = 998 - len("Subject: ")
MAX_BODY = 200_000
#: References keeps at most this many ids (the first and the nearest ones), as mailers do
MAX_REFERENCES = 20


def reply_subject(subject: str) -> str:
    """``Re:`` and the parent's subject without its list prefix and ``Re:``/``AW:``s (the
    list adds its prefix again)."""
    subject = thread_subject(subject)
    return f"Re: {subject}" if subject else "Re:"


def quoted(text: str, author: str) -> str:
    """The parent's text quoted (``> `` before each line, ``>`` before an empty one), after
    an attribution line; trailing spaces and blank lines left out."""
    lines = [line.rstrip() for line in text.rstrip().splitlines()] or [""]
    body = "\n".join(
        f">{line}" if line.startswith(">") or not line else f"> {line}" for line in lines
    )
    return f"{author} wrote:\n{body}\n\n" if author else f"{body}\n\n"


def new_message_id(mail_host: str) -> str:
    """A fresh ``<…>`` Message-ID in the list's domain."""
    return f"<web.{secrets.token_hex(12)}@{mail_host}>"


@dataclass(frozen=True)
class Parent:
    """What a reply takes from the archived post it answers."""

    message_id: str
    in_reply_to: str = ""
    references: tuple[str, ...] = ()


def angled(message_id: str) -> str:
    """``<id>``, whether or not the stored id had its angle brackets."""
    bare = message_id.strip().strip("<>").strip()
    return f"<{bare}>" if bare else ""


def references(parent: Parent) -> list[str]:
    """The reply's References: the parent's (or its In-Reply-To), then the parent."""
    own = angled(parent.message_id)
    chain = list(parent.references) or ([parent.in_reply_to] if parent.in_reply_to else [])
    chain = [angled(r) for r in chain]
    chain = [r for r in chain if r and r != own] + [own]
    if len(chain) > MAX_REFERENCES:
        chain = chain[:1] + chain[-(MAX_REFERENCES - 1) :]
    return chain


def one_line(text: str) -> str:
    """A header value typed in a form: one line, spaces folded, no control characters."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def message(
    *,
    sender: str,
    sender_name: str,
    list_address: str,
    subject: str,
    body: str,
    message_id: str,
    date: datetime,
    parent: Parent | None = None,
) -> bytes:
    """The post as it is submitted to the MTA (CRLF line ends; an address that is not
    ASCII is written in UTF-8, for an SMTPUTF8 transaction)."""
    msg = EmailMessage()
    local, _, domain = sender.rpartition("@")
    msg["From"] = Address(one_line(sender_name), local, domain)
    local, _, domain = list_address.rpartition("@")
    msg["To"] = Address("", local, domain)
    msg["Subject"] = one_line(subject)[:MAX_SUBJECT]
    msg["Date"] = format_datetime(date)
    msg["Message-ID"] = message_id
    if parent is not None:
        msg["In-Reply-To"] = angled(parent.message_id)
        msg["References"] = " ".join(references(parent))
    text = body.replace("\r\n", "\n").replace("\r", "\n")[:MAX_BODY]
    msg.set_content(text if text.endswith("\n") else text + "\n")
    ascii_only = sender.isascii() and list_address.isascii()
    return msg.as_bytes(policy=SMTP if ascii_only else SMTPUTF8)
