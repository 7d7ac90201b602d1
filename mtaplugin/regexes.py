"""Regular expressions that list owners (and the site's settings) write, run in linear time.

Bans and nonmember lists (``^regex`` lines), header matches, ``bounce_matching_headers``,
``acceptable_aliases``, topics and the site's ``header_checks`` are searched in every post,
inside the shared milter.  Python's :mod:`re` backtracks: ``^(a+)+$`` against forty ``a``
and a ``!`` runs for hours without releasing the GIL, which would stall every list of the
site.  So every such pattern goes through this module, which compiles it with RE2
(``google-re2``): matching takes time linear in the text, whatever the pattern.

The price, written in docs/rules.md:

- RE2 has no backreferences (``\\1``) and no lookaround (``(?=``, ``(?!``, ``(?<=``); a
  pattern using them is refused where it is set (REST, the web pages, the command line,
  the importers) with RE2's reason, like any invalid pattern;
- a pattern is at most :data:`MAX_LENGTH` characters, and its compiled program at most
  :data:`MAX_MEMORY` bytes (``(a{1000}){1000}`` is too large, not slow);
- a stored pattern that does not compile (written before, or by hand in SQL) matches
  nothing and is logged once per process; no post ever waits on a pattern.

All patterns are case-insensitive, as Mailman's are.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Protocol, cast

import re2

from mtaplugin.i18n import _

log = logging.getLogger(__name__)

#: the longest pattern accepted (Mailman's are an address or a few words)
MAX_LENGTH = 2000
#: the most memory RE2 may give one compiled pattern (its program and DFA cache)
MAX_MEMORY = 4 << 20


class Match(Protocol):
    def start(self, group: int = 0) -> int: ...
    def end(self, group: int = 0) -> int: ...
    def group(self, group: int = 0) -> str | None: ...


class _Compiled(Protocol):
    def search(self, text: str) -> Match | None: ...
    def match(self, text: str) -> Match | None: ...
    def sub(self, repl: str, text: str, count: int = 0) -> str: ...


class BadPattern(ValueError):
    """A pattern that cannot be used; the message (translated) says why."""


def _options() -> Any:
    options = re2.Options()
    options.case_sensitive = False
    options.max_mem = MAX_MEMORY
    options.log_errors = False  # RE2 would print every refusal on stderr
    return options


_OPTIONS = _options()


class Pattern:
    """A compiled pattern: :meth:`search` and :meth:`match` answer whether it matches."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str, compiled: _Compiled) -> None:
        #: the pattern as written
        self.pattern = pattern
        self._compiled = compiled

    def search(self, text: str) -> bool:
        """It matches somewhere in ``text``."""
        return self._compiled.search(text) is not None

    def match(self, text: str) -> bool:
        """It matches at the start of ``text`` (as :func:`re.match`)."""
        return self._compiled.match(text) is not None

    def match_at_start(self, text: str) -> Match | None:
        """The match at the start of ``text`` (its groups and span), or None."""
        return self._compiled.match(text)

    def sub(self, repl: str, text: str, count: int = 0) -> str:
        """``text`` with the first ``count`` matches (0: all) replaced by ``repl``."""
        return self._compiled.sub(repl, text, count)

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r})"


@functools.lru_cache(maxsize=4096)
def _compile(pattern: str) -> Pattern | str:
    """The compiled pattern, or RE2's reason (in English, for the log)."""
    if len(pattern) > MAX_LENGTH:
        return f"longer than {MAX_LENGTH} characters"
    try:
        return Pattern(pattern, cast(_Compiled, re2.compile(pattern, _OPTIONS)))
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)


def compile_pattern(pattern: str) -> Pattern:
    """``pattern`` compiled, or :class:`BadPattern` saying why it cannot be used."""
    found = _compile(pattern)
    if isinstance(found, Pattern):
        return found
    if len(pattern) > MAX_LENGTH:
        raise BadPattern(_("at most {n} characters").format(n=MAX_LENGTH))
    raise BadPattern(_("not a valid regular expression: {e}").format(e=found))


def problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be used (translated), or None when it can."""
    try:
        compile_pattern(pattern)
    except BadPattern as exc:
        return str(exc)
    return None


@functools.lru_cache(maxsize=1024)
def _logged(pattern: str, what: str, reason: str) -> None:
    log.warning("ignoring the regular expression %r in %s: %s", pattern, what, reason)


def usable(pattern: str, what: str) -> Pattern | None:
    """``pattern`` compiled, or None (it matches nothing; logged once) when it cannot be:
    for patterns stored before, which the code that reads them must not fail on."""
    found = _compile(pattern)
    if isinstance(found, Pattern):
        return found
    _logged(pattern, what, found)
    return None


def search(pattern: str, text: str, what: str) -> bool:
    """``pattern`` matches somewhere in ``text`` (a pattern that cannot be used: no)."""
    compiled = usable(pattern, what)
    return compiled is not None and compiled.search(text)


def match(pattern: str, text: str, what: str) -> bool:
    """``pattern`` matches at the start of ``text`` (a pattern that cannot be used: no)."""
    compiled = usable(pattern, what)
    return compiled is not None and compiled.match(text)
