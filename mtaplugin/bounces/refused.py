"""A permanent refusal met by the outbox (5xx at RCPT or after DATA) of a member's list
copy, read as that member's bounce: the same :class:`~mtaplugin.model.BounceEvent` a DSN
would give, recorded in the transaction that takes the member off the outbox row.  The
kind comes from the reply's RFC 3463 code, as for a DSN (:func:`mtaplugin.bounces.dsn.
kind_of_reply`: 5.7.x policy, 5.2.2 not scored, else hard)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from email.parser import BytesHeaderParser

from mtaplugin.bounces.dsn import DIAGNOSTIC_MAX, kind_of_reply
from mtaplugin.model import BounceEvent

#: the outbox rows whose recipients are members of their list: a post, a released hold
#: and a digest (a notice's recipients are owners, moderators or posters)
MEMBER_COPIES = frozenset({"post", "release", "digest"})


def message_id(raw: bytes) -> str:
    """The copy's Message-ID ("" if none)."""
    headers = BytesHeaderParser().parsebytes(raw)
    return " ".join(str(headers.get("message-id", "")).split())


def events(
    mailing_list_id: int, refused: Mapping[str, str], raw: bytes, now: datetime
) -> list[BounceEvent]:
    """One event per member refused for good (``refused``: address → the MTA's reply)."""
    if not refused:
        return []
    mid = message_id(raw)
    found = []
    for rcpt, reply in refused.items():
        kind, status = kind_of_reply(reply)
        found.append(
            BounceEvent(
                mailing_list_id=mailing_list_id,
                email=rcpt.strip().strip("<>").lower(),
                at=now,
                message_id=mid,
                kind=kind,
                status=status,
                diagnostic=" ".join(reply.split())[:DIAGNOSTIC_MAX],
                processed=False,
            )
        )
    return found
