"""What the front ends that cannot edit a transaction (LMTP, the pipe, Exim's ACL) share.

They hand the engine one recipient (LMTP, pipe) or the whole transaction (Exim's DATA ACL)
with ``in_place=False``: an accepted post is expanded, decorated and stored in the outbox
before the answer, a hold is stored, and the front end only says yes or no.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from mtaplugin.engine import ListEngine
from mtaplugin.i18n import _
from mtaplugin.posting.verdict import (
    Accept,
    Discard,
    Dropped,
    Held,
    Refused,
    Reject,
    Reply,
    TempFail,
    Verdict,
    permanent,
)
from mtaplugin.vocabulary.envelope import Envelope

_EOL = re.compile(rb"\r?\n")


def crlf(raw: bytes) -> bytes:
    """``raw`` with every line ending as CRLF (Exim hands LF-only messages over)."""
    return _EOL.sub(b"\r\n", raw)


@dataclass(frozen=True)
class Answer:
    """One recipient's answer: ``reply`` is None when the post was taken (250)."""

    reply: Reply | None
    #: a short word for the 250 text and the logs: accepted, held, discarded
    what: str = "accepted"
    #: the rule that decided a refusal ("" for refusals no rule made)
    rule: str = ""


def answer_of(verdict: Verdict) -> Answer:
    """The answer to give for a verdict reached with ``in_place=False``."""
    match verdict:
        case Reject(reply=reply, outcomes=outcomes):
            rules = [o.rule for o in outcomes if isinstance(o, Refused) and o.reply == reply]
            return Answer(reply, rule=rules[0] if rules else "")
        case TempFail(reply=reply):
            return Answer(reply)
        case Accept(outcomes=outcomes) | Discard(outcomes=outcomes):
            if any(isinstance(o, Held) for o in outcomes):
                return Answer(None, "held for moderation")
            if outcomes and all(isinstance(o, Dropped) for o in outcomes):
                return Answer(None, "discarded")
            return Answer(None, "accepted")
    raise AssertionError(f"unknown verdict {verdict!r}")


def refusal(engine: ListEngine, recipient: str) -> Reply | None:
    """The RCPT answer: None for a list address, else why it is refused (these front ends
    only ever get list addresses, so anything else is not ours)."""
    check = engine.check_recipient(recipient)
    if check.reply is not None:
        return check.reply
    if not check.is_list:
        return permanent(
            "5.1.1",
            _("<{address}>: not a list address on this server").format(
                address=recipient.strip().strip("<>")
            ),
        )
    return None


def decide_one(engine: ListEngine, envelope: Envelope, recipient: str, raw: bytes) -> Answer:
    """Decide the post ``raw`` for one list recipient, on its own (each LMTP recipient and
    each pipe delivery gets its own answer)."""
    one = replace(envelope, recipients=[recipient])
    return answer_of(engine.decide(one, crlf(raw), in_place=False))
