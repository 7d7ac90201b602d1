"""Values that are an address or, starting with ``^``, a regular expression (Mailman's
convention): the list settings that hold such lines, and the check of a regular
expression that bans, header matches and those settings share (RE2's syntax, at most
:data:`mtaplugin.regexes.MAX_LENGTH` characters: :mod:`mtaplugin.regexes`)."""

from __future__ import annotations

from mtaplugin.errors import InvalidInput
from mtaplugin.regexes import problem
from mtaplugin.vocabulary.addresses import normalize_email
from mtaplugin.vocabulary.bans import is_pattern

#: list settings whose lines are addresses or ``^regex``es (REST and the web check them)
ADDRESS_PATTERN_SETTINGS = frozenset(
    {
        "accept_these_nonmembers",
        "hold_these_nonmembers",
        "reject_these_nonmembers",
        "discard_these_nonmembers",
        "acceptable_aliases",
        "dmarc_addresses",
    }
)


def check_regex(field: str, pattern: str) -> str:
    """``pattern``, or :class:`InvalidInput` naming ``field`` when it cannot be used."""
    reason = problem(pattern)
    if reason is not None:
        raise InvalidInput(field, reason)
    return pattern


def address_or_regex(field: str, value: str) -> str:
    """A checked ``^regex`` as it is, or the address normalized."""
    text = value.strip()
    return check_regex(field, text) if is_pattern(text) else normalize_email(text, field)
