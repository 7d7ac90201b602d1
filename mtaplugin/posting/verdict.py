"""What the engine decides, as values the front ends apply.

Per list, a :data:`ListOutcome`: :class:`Accepted` (with the members it goes to),
:class:`Held`, :class:`Refused` (with a 5xx reply), :class:`Dropped` or :class:`Deferred`
(with a 4xx reply); each variant carries only its own fields.  For the whole SMTP
transaction, a :data:`Verdict`: :class:`Accept` with the edits to make, :class:`Discard`
(answer 250, deliver nothing), :class:`Reject` (5xx) or :class:`TempFail` (4xx).  The reply
types (:mod:`mtaplugin.posting.replies`) make a 4xx reject or a 5xx tempfail impossible to
build.  What the engine stored on the way (held posts, outbox copies) is :class:`Stored`,
beside the outcomes, not in them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from mtaplugin.enums import FilterAction
from mtaplugin.posting.replies import (
    PermanentReply,
    Reply,
    TemporaryReply,
    permanent,
    temporary,
)
from mtaplugin.vocabulary.addresses import Subaddress

if TYPE_CHECKING:
    from mtaplugin.vocabulary.draft import HeaderOp

__all__ = [
    "Accept",
    "Accepted",
    "Deferred",
    "Discard",
    "Dropped",
    "Edits",
    "Held",
    "ListOutcome",
    "PermanentReply",
    "Reason",
    "RecipientCheck",
    "Refused",
    "Reject",
    "Reply",
    "Stored",
    "TempFail",
    "TemporaryReply",
    "Verdict",
    "permanent",
    "temporary",
]


@dataclass(frozen=True)
class Reason:
    """Why a rule hit: the rule's name (as in the docs and the SMTP text) and a sentence."""

    rule: str
    text: str


# --- one list's outcome ---------------------------------------------------------------
@dataclass(frozen=True)
class Accepted:
    """The post goes to ``members``."""

    list_id: str
    #: the list address as the MTA gave it (kept verbatim for delrcpt)
    recipient: str
    #: who gets the post (regular-delivery members; the staff for -owner mail)
    members: tuple[str, ...]
    #: reasons recorded by rules that did not decide (an approved post keeps them)
    reasons: tuple[Reason, ...] = ()
    #: headers the members' copy goes without (the Approved: family)
    strip_headers: tuple[str, ...] = ()
    #: the list's topics the post matched (the copy's X-Topics:)
    topics: tuple[str, ...] = ()
    #: an ``Urgent:`` post: it went to every member at once, and not into the digest
    urgent: bool = False


@dataclass(frozen=True)
class Held:
    """The post waits for a moderator."""

    list_id: str
    recipient: str
    reasons: tuple[Reason, ...]


@dataclass(frozen=True)
class Refused:
    """The list refuses the post: ``rule`` decided, ``reply`` tells the sender."""

    list_id: str
    recipient: str
    reply: PermanentReply
    rule: str
    reasons: tuple[Reason, ...] = ()


@dataclass(frozen=True)
class Dropped:
    """Nobody gets the post (a loop, a discard action, mail to -bounces or a command
    address, an autoresponse that ends it); ``filtered``: content filtering left nothing
    for the members, and the list's ``filter_action`` (discard, forward, preserve) says what
    becomes of it."""

    list_id: str
    recipient: str
    reasons: tuple[Reason, ...] = ()
    filtered: FilterAction | None = None


@dataclass(frozen=True)
class Deferred:
    """The list cannot decide now: the sender's MTA should try again later."""

    list_id: str
    recipient: str
    reply: TemporaryReply
    reasons: tuple[Reason, ...] = ()


ListOutcome = Accepted | Held | Refused | Dropped | Deferred


def _empty() -> Mapping[str, int]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Stored:
    """What the engine stored before the reply, by list address (as the MTA gave it)."""

    #: the held post's id
    held: Mapping[str, int] = field(default_factory=_empty)
    #: the outbox row carrying the list's own copy (when it could not be made in place)
    outbox: Mapping[str, int] = field(default_factory=_empty)


# --- the transaction's verdict ----------------------------------------------------------
@dataclass(frozen=True)
class Edits:
    """Changes to the transaction, in the milter's terms."""

    #: header edits in order: change/delete an occurrence, insert at a position
    #: (see :class:`mtaplugin.vocabulary.draft.HeaderOp`)
    header_ops: tuple[HeaderOp, ...] = ()
    #: the new body, when it changed
    body: bytes | None = None
    del_recipients: tuple[str, ...] = ()
    add_recipients: tuple[str, ...] = ()
    #: the new envelope sender (the list's -bounces address, for an in-place copy), or
    #: None: the sender stays as it came (the other recipients get the post as it came)
    mail_from: str | None = None


@dataclass(frozen=True)
class Accept:
    edits: Edits = field(default_factory=Edits)
    outcomes: tuple[ListOutcome, ...] = ()
    stored: Stored = field(default_factory=Stored)


@dataclass(frozen=True)
class Discard:
    """Say 250 and deliver nothing (held, discarded, or no-one to deliver to)."""

    outcomes: tuple[ListOutcome, ...] = ()
    stored: Stored = field(default_factory=Stored)


@dataclass(frozen=True)
class Reject:
    reply: PermanentReply
    outcomes: tuple[ListOutcome, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.reply, PermanentReply):
            raise ValueError("a Reject needs a 5xx reply")


@dataclass(frozen=True)
class TempFail:
    reply: TemporaryReply

    def __post_init__(self) -> None:
        if not isinstance(self.reply, TemporaryReply):
            raise ValueError("a TempFail needs a 4xx reply")


Verdict = Accept | Discard | Reject | TempFail


@dataclass(frozen=True)
class RecipientCheck:
    """The answer at RCPT time."""

    #: None: accept the recipient; else refuse it with this reply
    reply: Reply | None = None
    #: the list it addresses, if any
    list_id: str | None = None
    subaddress: Subaddress = Subaddress.posting

    @property
    def is_list(self) -> bool:
        return self.list_id is not None
