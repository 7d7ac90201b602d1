"""Values that are an address or, starting with ``^``, a regular expression (Mailman's
convention): the list settings that hold such lines, and the check of a regular
expression that bans, header matches and those settings share (RE2's syntax, at most
:data:`mtaplugin.regexes.MAX_LENGTH` characters: :mod:`mtaplugin.regexes`).  The four
nonmember settings also take ``@list@domain``, the members of that list
(:mod:`mtaplugin.posting.atlists`)."""

from __future__ import annotations

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.lists.bans import is_pattern
from mtaplugin.posting.addresses import normalize_email
from mtaplugin.posting.atlists import NONMEMBER_SETTINGS
from mtaplugin.regexes import problem

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
#: list settings whose lines may also be ``@list@domain`` (as Mailman 3's REST API takes)
AT_LIST_SETTINGS = frozenset(NONMEMBER_SETTINGS)


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


def setting_line(field: str, value: str) -> str:
    """A line of an address setting (:data:`ADDRESS_PATTERN_SETTINGS`), checked: a
    ``^regex``, an address (normalized), or in the nonmember settings ``@list@domain``
    (lower-cased; the list need not exist, as in Mailman)."""
    text = value.strip()
    if field in AT_LIST_SETTINGS and text.startswith("@"):
        try:
            return "@" + normalize_email(text[1:], field)
        except InvalidInput:
            raise InvalidInput(
                field,
                _("{value!r} names no list: write @ and the list's address, @list@domain").format(
                    value=value
                ),
            ) from None
    return address_or_regex(field, text)
