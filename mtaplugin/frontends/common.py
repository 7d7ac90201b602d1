"""What the front ends that cannot edit a transaction (LMTP, the pipe, Exim's ACL) share.

They hand the engine one recipient (LMTP, pipe) or the whole transaction (Exim's DATA ACL)
with ``in_place=False``: an accepted post is expanded, decorated and stored in the outbox
before the answer, a hold is stored, and the front end only says yes or no.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from mtaplugin.engine import Engine
from mtaplugin.i18n import _
from mtaplugin.posting.envelope import Envelope
from mtaplugin.posting.verdict import (
    Accept,
    Decision,
    Discard,
    Reject,
    Reply,
    TempFail,
    Verdict,
    permanent,
)

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
    #: the rules that decided a refusal (empty for refusals no rule made)
    rules: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.reply is None


def answer_of(verdict: Verdict) -> Answer:
    """The answer to give for a verdict reached with ``in_place=False``."""
    match verdict:
        case Reject(reply=reply, outcomes=outcomes):
            rules = tuple(r.rule for o in outcomes if o.reply == reply for r in o.reasons)
            return Answer(reply, rules=rules)
        case TempFail(reply=reply):
            return Answer(reply)
        case Accept(outcomes=outcomes) | Discard(outcomes=outcomes):
            decisions = {o.decision for o in outcomes}
            if Decision.hold in decisions:
                return Answer(None, "held for moderation")
            if decisions and decisions <= {Decision.discard}:
                return Answer(None, "discarded")
            return Answer(None, "accepted")
    raise AssertionError(f"unknown verdict {verdict!r}")


def refusal(engine: Engine, recipient: str) -> Reply | None:
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


def decide_one(engine: Engine, envelope: Envelope, recipient: str, raw: bytes) -> Answer:
    """Decide the post ``raw`` for one list recipient, on its own (each LMTP recipient and
    each pipe delivery gets its own answer)."""
    one = replace(envelope, recipients=[recipient])
    return answer_of(engine.decide(one, crlf(raw), in_place=False))
