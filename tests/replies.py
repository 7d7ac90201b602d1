"""The SMTP replies the tests expect, by name (as aiosmtpd's ``smtp.Status`` names its own):
``assert said(refused) == ("data", REFUSED_BY_RULE)`` instead of ``550`` and ``"5.7.1"``
spelt out in every test."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtaplugin.posting.replies import PermanentReply, TemporaryReply
from mtaplugin.testing.mta import Refused

_ENHANCED = re.compile(r"\b([245]\.\d{1,3}\.\d{1,3})\b")


@dataclass(frozen=True)
class Reply:
    """A basic code (RFC 5321) and an enhanced one (RFC 3463); the text is the test's."""

    code: int
    enhanced: str

    def __str__(self) -> str:
        return f"{self.code} {self.enhanced}"

    @property
    def temporary(self) -> bool:
        return 400 <= self.code < 500

    @classmethod
    def coded(cls, reply: PermanentReply | TemporaryReply) -> Reply:
        """The codes of a reply mtaplugin built."""
        return cls(reply.code, reply.enhanced)

    @classmethod
    def of(cls, code: int, text: str | bytes) -> Reply:
        """The reply an MTA gave: its code and the first enhanced code in its text."""
        found = _ENHANCED.search(text.decode() if isinstance(text, bytes) else text)
        return cls(code, found.group(1) if found else "")


#: a posting rule refused the post; the text names the list and the rule
REFUSED_BY_RULE = Reply(550, "5.7.1")
#: the address is in a list domain but names no list (or no pending request)
NO_SUCH_LIST = Reply(550, "5.1.1")
#: the list manager cannot decide now (the list database or DNS does not answer): the
#: client's MTA keeps the post and tries again later
TRY_LATER = Reply(451, "4.3.0")
#: Postfix's answer when a lookup of the list-mail check fails (mtaplugin is down):
#: contrib/postfix/main.cf's restriction class for the list domains
POSTFIX_LOOKUP_FAILED = Reply(451, "4.3.5")
#: Postfix's answer for a domain it does not relay (no list there)
POSTFIX_RELAY_DENIED = Reply(554, "5.7.1")
#: Sendmail's answer for a domain it does not relay
SENDMAIL_RELAY_DENIED = Reply(550, "5.7.1")


def said(refused: Refused | None) -> tuple[str, Reply] | None:
    """Where the MTA refused the transaction and with what reply (None: it said 250)."""
    if refused is None:
        return None
    return refused.stage, Reply.of(refused.code, refused.text)
