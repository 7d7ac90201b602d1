"""What the engine decides, as values the front ends apply.

Per list, a :class:`ListOutcome` (accept, hold, discard, reject, tempfail) with its reasons.
For the whole SMTP transaction, a :class:`Verdict`: :class:`Accept` with the edits to make,
:class:`Discard` (answer 250, deliver nothing), :class:`Reject` (5xx) or :class:`TempFail`
(4xx).  The types make a 4xx reject or a 5xx tempfail impossible to build.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from mtaplugin.copies.transforms.draft import HeaderOp
from mtaplugin.model.enums import FilterAction

_ENHANCED_RE = re.compile(r"^[245]\.\d{1,3}\.\d{1,3}$")


@dataclass(frozen=True)
class Reply:
    """An SMTP reply: basic code (RFC 5321 §4.2), enhanced code (RFC 3463) and text."""

    code: int
    enhanced: str
    text: str

    def __post_init__(self) -> None:
        if not 400 <= self.code <= 599:
            raise ValueError(f"not a failure reply code: {self.code}")
        if not _ENHANCED_RE.match(self.enhanced) or self.enhanced[0] != str(self.code)[0]:
            raise ValueError(f"enhanced code {self.enhanced!r} does not match {self.code}")
        if "\r" in self.text or "\n" in self.text:
            raise ValueError("reply text must be one line")

    def __str__(self) -> str:
        return f"{self.code} {self.enhanced} {self.text}"


def permanent(enhanced: str, text: str, code: int = 550) -> Reply:
    if not 500 <= code <= 599:
        raise ValueError(f"a permanent reply needs a 5xx code, not {code}")
    return Reply(code, enhanced, text)


def temporary(enhanced: str, text: str, code: int = 451) -> Reply:
    if not 400 <= code <= 499:
        raise ValueError(f"a temporary reply needs a 4xx code, not {code}")
    return Reply(code, enhanced, text)


class Decision(StrEnum):
    accept = "accept"
    hold = "hold"
    discard = "discard"
    reject = "reject"
    tempfail = "tempfail"


@dataclass(frozen=True)
class Reason:
    """Why a rule hit: the rule's name (as in the docs and the SMTP text) and a sentence."""

    rule: str
    text: str


@dataclass(frozen=True)
class ListOutcome:
    """What happened to one list's copy of the post."""

    list_id: str
    #: the recipient as the MTA gave it (kept verbatim for delrcpt)
    recipient: str
    decision: Decision
    reasons: tuple[Reason, ...] = ()
    #: who gets the accepted post (regular-delivery members)
    recipients: tuple[str, ...] = ()
    reply: Reply | None = None
    held_id: int | None = None
    #: headers to remove from the members' copy (the Approved: family)
    strip_headers: tuple[str, ...] = ()
    #: outbox row carrying this list's own copy (transactions with other recipients)
    outbox_id: int | None = None
    #: content filtering kept the whole post from the members: the list's filter_action
    filter_action: FilterAction | None = None
    #: the members' copy as milter edits of the original (in-place delivery)
    header_ops: tuple[HeaderOp, ...] = ()
    new_body: bytes | None = None


@dataclass(frozen=True)
class Edits:
    """Changes to the transaction, in the milter's terms."""

    add_headers: tuple[tuple[str, str], ...] = ()
    #: header names whose every occurrence is removed
    remove_headers: tuple[str, ...] = ()
    #: header edits in order (after ``remove_headers``): change/delete an occurrence,
    #: insert at a position (see :class:`mtaplugin.copies.transforms.draft.HeaderOp`)
    header_ops: tuple[HeaderOp, ...] = ()
    #: the new body, when it changed
    body: bytes | None = None
    del_recipients: tuple[str, ...] = ()
    add_recipients: tuple[str, ...] = ()


@dataclass(frozen=True)
class Accept:
    edits: Edits = field(default_factory=Edits)
    outcomes: tuple[ListOutcome, ...] = ()


@dataclass(frozen=True)
class Discard:
    """Say 250 and deliver nothing (held, discarded, or no-one to deliver to)."""

    outcomes: tuple[ListOutcome, ...] = ()


@dataclass(frozen=True)
class Reject:
    reply: Reply
    outcomes: tuple[ListOutcome, ...] = ()

    def __post_init__(self) -> None:
        if self.reply.code < 500:
            raise ValueError("a Reject needs a 5xx reply")


@dataclass(frozen=True)
class TempFail:
    reply: Reply

    def __post_init__(self) -> None:
        if self.reply.code >= 500:
            raise ValueError("a TempFail needs a 4xx reply")


Verdict = Accept | Discard | Reject | TempFail


@dataclass(frozen=True)
class RecipientCheck:
    """The answer at RCPT time."""

    #: None: accept the recipient; else refuse it with this reply
    reply: Reply | None = None
    #: the list it addresses, if any
    list_id: str | None = None
    subaddress: str = ""

    @property
    def is_list(self) -> bool:
        return self.list_id is not None
