"""``@list`` entries of the four nonmember settings: "the members of that other list".

Mailman 3 writes such an entry ``@list@domain`` (its REST API checks that what follows the
``@`` is an address) and Mailman 2.1 wrote ``@list``, a list of the same domain; both are
read here.  Whether the sender is a member of a named list is looked up by the engine at
decision time (:mod:`mtaplugin.engine.atlists`) and handed to the rules as a set of list
names, so this module, like the rest of :mod:`mtaplugin.posting`, does no I/O.

Mailman 3.3 honours such entries in ``accept_these_nonmembers`` only; mtaplugin honours
them in all four, as Mailman 2.1 did.  An entry naming the list itself matches nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mtaplugin.model import MailingList

#: the settings whose lines may name another list
NONMEMBER_SETTINGS = (
    "accept_these_nonmembers",
    "hold_these_nonmembers",
    "reject_these_nonmembers",
    "discard_these_nonmembers",
)


def target(entry: str, mail_host: str) -> str | None:
    """The list an ``@list`` entry names (``list@domain``, lower case), None when
    ``entry`` names none.  ``@list`` without a domain (Mailman 2.1's form) is the list of
    that name in ``mail_host``."""
    text = entry.strip().lower()
    if not text.startswith("@") or len(text) < 2:
        return None
    name = text[1:]
    return name if "@" in name else f"{name}@{mail_host.lower()}"


def referenced(mlist: MailingList) -> frozenset[str]:
    """Every other list the nonmember settings of ``mlist`` name."""
    own = mlist.fqdn_listname.lower()
    found = set()
    for setting in NONMEMBER_SETTINGS:
        for entry in getattr(mlist, setting) or ():
            name = target(str(entry), mlist.mail_host)
            if name is not None and name != own:
                found.add(name)
    return frozenset(found)


def matches(entries: Iterable[str], mail_host: str, member_of: Collection[str]) -> bool:
    """Whether one of ``entries`` names a list in ``member_of`` (the lists the sender is
    a member of)."""
    if not member_of:
        return False
    return any(target(str(e), mail_host) in member_of for e in entries)
