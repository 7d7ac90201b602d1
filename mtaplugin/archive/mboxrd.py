"""A minimal mboxrd writer for the archive's downloads (``YYYY-MM.mbox``, a thread's mbox).

A stand-in until ``mtaplugin.archive.mbox`` (the archive store's import and export) is
merged: the pages call whichever is there.  mboxrd (as Mailman 3 and HyperKitty export):
each post starts with a ``From `` line (envelope sender and date in asctime form), its
lines end in LF, every line that matches ``>*From `` gets one more ``>``, and a blank line
ends the post, so that reading the file back gives every post byte for byte (but the
line ends).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

from mtaplugin.model import ArchivedMessage

_FROM = re.compile(rb"^(>*From )", re.MULTILINE)


def from_line(sender: str, when: datetime | None) -> bytes:
    who = "".join(ch for ch in sender if ch > " " and ch != "\x7f") or "MAILER-DAEMON"
    stamp = (when or datetime(1970, 1, 1, tzinfo=UTC)).astimezone(UTC)
    return f"From {who} {stamp.strftime('%a %b %d %H:%M:%S %Y')}\n".encode("ascii", "replace")


def entry(message: ArchivedMessage) -> bytes:
    """One post as an mboxrd entry."""
    body = message.raw.replace(b"\r\n", b"\n")
    body = _FROM.sub(rb">\1", body)
    if not body.endswith(b"\n"):
        body += b"\n"
    return from_line(message.sender, message.date or message.archived_at) + body + b"\n"


def write(messages: Iterable[ArchivedMessage]) -> Iterator[bytes]:
    """The mboxrd file of ``messages`` (removed posts are left out), in pieces."""
    for message in messages:
        if not message.removed:
            yield entry(message)
