"""Values that are an address or, starting with ``^``, a regular expression (Mailman's
convention): the list settings that hold such lines, and the check of a regular
expression that bans, header matches and those settings share."""

from __future__ import annotations

import re

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.lists.bans import is_pattern
from mtaplugin.posting.addresses import normalize_email

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
    """``pattern``, or :class:`InvalidInput` naming ``field`` when it does not compile."""
    try:
        re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise InvalidInput(field, _("not a valid regular expression: {e}").format(e=exc)) from None
    return pattern


def address_or_regex(field: str, value: str) -> str:
    """A checked ``^regex`` as it is, or the address normalized."""
    text = value.strip()
    return check_regex(field, text) if is_pattern(text) else normalize_email(text, field)
