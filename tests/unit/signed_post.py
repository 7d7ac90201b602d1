"""The post the DKIM signing, ARC sealing and verifying tests sign: Anne's post to
``team@lists.example.com``, each test adding the fields its signer covers."""

from __future__ import annotations

RECEIVED = b"Received: from x by y; Thu, 03 Dec 2026 10:00:00 +0000\r\n"
LIST_ID = b"List-Id: <team.lists.example.com>\r\n"
BODY = b"Hello members\r\n"


def signed_post(
    *fields: bytes,
    first: bytes = b"",
    subject: bytes = b"Hello",
    body: bytes = b"Hello members\r\n",
) -> bytes:
    """``first`` (whole lines), From, To, Subject, Date, Message-ID, ``fields`` (whole
    lines), then ``body``; CRLF line ends."""
    return (
        first
        + b"From: Anne <anne@example.org>\r\n"
        + b"To: team@lists.example.com\r\n"
        + b"Subject: "
        + subject
        + b"\r\n"
        + b"Date: Thu, 03 Dec 2026 10:00:00 +0000\r\n"
        + b"Message-ID: <1@example.org>\r\n"
        + b"".join(fields)
        + b"\r\n"
        + body
    )
