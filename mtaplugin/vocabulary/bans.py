"""The ban list of a mailing list (its own bans and the site's), matched one way.

As in Mailman, a ban is an exact address, or a regular expression when (and only when)
it starts with ``^``; both match case-insensitively (the expressions in linear time:
:mod:`mtaplugin.regexes`).  :class:`BanList` is plain data, no
SQL: the posting snapshot keeps one for the ``banned-address`` rule
(:mod:`mtaplugin.lists.cache` loads it), and the subscription workflow asks one built
from the bans that can match an address (:func:`mtaplugin.manage.bans.is_banned`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mtaplugin.regexes import Pattern, usable


def is_pattern(text: str) -> bool:
    """Whether a ban is a regular expression (it starts with ``^``) or an address."""
    return text.startswith("^")


@dataclass(frozen=True)
class BanList:
    #: banned addresses, lower-cased
    exact: frozenset[str] = frozenset()
    #: the ``^regex`` bans, compiled case-insensitive
    regex: tuple[Pattern, ...] = ()

    @classmethod
    def of(cls, bans: Iterable[str], what: str = "the bans") -> BanList:
        """The ban list of these bans; a regex that does not compile is left out (and
        logged), so one bad ban cannot block a list."""
        exact: set[str] = set()
        regex: list[Pattern] = []
        for text in bans:
            if not is_pattern(text):
                exact.add(text.lower())
            elif (compiled := usable(text, what)) is not None:
                regex.append(compiled)
        return cls(frozenset(exact), tuple(regex))

    def matches(self, email: str) -> bool:
        email = email.lower()
        return email in self.exact or any(p.match(email) for p in self.regex)
