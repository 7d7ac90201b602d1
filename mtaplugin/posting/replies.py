"""SMTP failure replies, one type per class: :class:`PermanentReply` (5xx) and
:class:`TemporaryReply` (4xx).

The basic code is a ``Literal`` of the codes of its class, so a type checker refuses
``PermanentReply(451, ...)`` or ``TemporaryReply(550, ...)``; the same is checked at run time
(with the enhanced code of RFC 3463, whose class must match, and the one-line text).  A
consumer branches on the type, never on the number: ``isinstance(reply, TemporaryReply)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Generic, Literal, TypeVar, get_args

#: the 5xx codes of RFC 5321 §4.2.3 (and 521/556 of RFC 7504)
PermanentCode = Literal[500, 501, 502, 503, 504, 521, 550, 551, 552, 553, 554, 555, 556]
#: the 4xx codes of RFC 5321 §4.2.3
TemporaryCode = Literal[421, 450, 451, 452, 455]

_ENHANCED_RE = re.compile(r"^[45]\.\d{1,3}\.\d{1,3}$")

#: the basic codes of one class of reply
_Code = TypeVar("_Code", bound=int)


@dataclass(frozen=True)
class _Reply(Generic[_Code]):
    """A failure reply of the class a subclass names (its codes and its name in errors),
    checked when it is made."""

    code: _Code
    enhanced: str
    text: str

    #: the basic codes of the class (its ``Literal``'s), and how an error names the class
    _codes: ClassVar[frozenset[int]]
    _kind: ClassVar[str]

    def __post_init__(self) -> None:
        code, enhanced, kind = self.code, self.enhanced, self._kind
        if code not in self._codes:
            raise ValueError(f"a {kind} reply needs a {kind} code, not {code}")
        if not _ENHANCED_RE.match(enhanced) or enhanced[0] != str(code)[0]:
            raise ValueError(f"enhanced code {enhanced!r} does not match {code}")
        if "\r" in self.text or "\n" in self.text:
            raise ValueError("reply text must be one line")

    def __str__(self) -> str:
        return f"{self.code} {self.enhanced} {self.text}"


@dataclass(frozen=True)
class PermanentReply(_Reply[PermanentCode]):
    """A 5xx reply: the sender's MTA gives up (and tells its user)."""

    _codes = frozenset(get_args(PermanentCode))
    _kind = "5xx"


@dataclass(frozen=True)
class TemporaryReply(_Reply[TemporaryCode]):
    """A 4xx reply: the sender's MTA keeps the mail and tries again later."""

    _codes = frozenset(get_args(TemporaryCode))
    _kind = "4xx"


#: any failure reply
Reply = PermanentReply | TemporaryReply


#: control characters and the Unicode line and paragraph separators
_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
#: a reply line this long is plenty (RFC 5321 §4.5.3.1.5 allows 512 octets with the code)
MAX_TEXT = 400


def one_line(text: str) -> str:
    """``text`` as one line of a reply: no CR, LF or other control character (a list
    owner's refusal text, a sender's address or display name cannot start a second reply
    line or smuggle a header), whitespace collapsed, at most :data:`MAX_TEXT` characters."""
    flat = " ".join(_BREAKS.sub(" ", text).split())
    return flat if len(flat) <= MAX_TEXT else flat[: MAX_TEXT - 3] + "..."


def permanent(enhanced: str, text: str, code: PermanentCode = 550) -> PermanentReply:
    """A 5xx reply; ``text`` may come from anyone: it is made one line."""
    return PermanentReply(code, enhanced, one_line(text))


def temporary(enhanced: str, text: str, code: TemporaryCode = 451) -> TemporaryReply:
    """A 4xx reply; ``text`` may come from anyone: it is made one line."""
    return TemporaryReply(code, enhanced, one_line(text))
