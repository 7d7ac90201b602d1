"""List addresses: parsing the recipients the MTA hands us, and checking what people type.

A list ``team@lists.example`` answers to its posting address and to the sub-addresses
``team-request``, ``-owner``, ``-bounces[+…]``, ``-confirm[+TOKEN]``, ``-join``, ``-leave``,
``-subscribe`` and ``-unsubscribe`` (Mailman's set).  Anything after ``+`` is the extension
(a VERP-encoded member address, or a confirmation token).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from email.utils import getaddresses
from enum import Enum

from mtaplugin import regexes
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _

EXTENSION_DELIMITER = "+"


class Subaddress(Enum):
    """Which of a list's addresses a recipient names: ``posting`` is the list address
    itself, the others are ``list-<value>@host`` (Mailman's set).  Compare members with
    ``is``; ``.value`` is the suffix as written."""

    posting = ""
    request = "request"
    owner = "owner"
    bounces = "bounces"
    confirm = "confirm"
    join = "join"
    leave = "leave"
    subscribe = "subscribe"
    unsubscribe = "unsubscribe"

    @property
    def is_command(self) -> bool:
        """Mail to it is read as email commands (:mod:`mtaplugin.commands`)."""
        return self in _COMMAND_ADDRESSES

    @classmethod
    def suffixes(cls) -> tuple[Subaddress, ...]:
        """Every sub-address but the posting address."""
        return tuple(s for s in cls if s is not cls.posting)


_COMMAND_ADDRESSES = frozenset(
    {
        Subaddress.request,
        Subaddress.join,
        Subaddress.leave,
        Subaddress.subscribe,
        Subaddress.unsubscribe,
        Subaddress.confirm,
    }
)

_SUFFIX_RE = re.compile(
    r"^(?P<name>.+)-(?P<sub>" + "|".join(s.value for s in Subaddress.suffixes()) + r")$"
)
# RFC 5321 §4.1.2 dot-atom local parts, the practical subset lists use; lower case only.
_LIST_NAME_RE = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$")
_LABEL_RE = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_LOCAL_RE = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}$")


@dataclass(frozen=True)
class ListAddress:
    """One way of reading a recipient as a list address."""

    list_name: str
    mail_host: str
    subaddress: Subaddress
    #: what followed ``+`` ("" if nothing)
    extension: str


def strip_brackets(address: str) -> str:
    """Postfix passes envelope addresses as ``<a@b>``; we want ``a@b``."""
    address = address.strip()
    if address.startswith("<") and address.endswith(">"):
        address = address[1:-1]
    return address


def split(address: str) -> tuple[str, str]:
    """``Local@Domain`` → (local, domain lower-cased); a missing @ gives domain ''."""
    local, at, domain = strip_brackets(address).rpartition("@")
    if not at:
        return domain, ""
    return local, domain.lower().rstrip(".")


def candidates(address: str) -> list[ListAddress]:
    """Every reading of ``address`` as a list address, the posting address first.

    ``team-request@x`` is both the posting address of a list called ``team-request``
    and the request address of ``team``; the database decides which one exists.
    """
    local, domain = split(address)
    if not domain or not local:
        return []
    local = local.lower()
    base, _plus, extension = local.partition(EXTENSION_DELIMITER)
    found: list[ListAddress] = []
    if not extension:
        found.append(ListAddress(base, domain, Subaddress.posting, ""))
    m = _SUFFIX_RE.match(base)
    if m:
        found.append(ListAddress(m.group("name"), domain, Subaddress(m.group("sub")), extension))
    return found


# A header field's address list in its common, plain form: ``a@b``, ``<a@b>`` or
# ``Name Words <a@b>``, comma-separated, where names and addresses are dot-atoms (no
# quotes, comments, groups, route addresses or domain literals).
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_PLAIN_ADDR = rf"{_ATEXT}(?:\.{_ATEXT})*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
_PLAIN_ITEM = re.compile(
    rf"(?P<bare>{_PLAIN_ADDR})|(?P<name>[A-Za-z0-9!#$%&'*+/=?^_`{{|}}~.\s-]*?)"
    rf"\s*<(?P<addr>{_PLAIN_ADDR})>"
)


def header_addresses(values: list[str]) -> list[tuple[str, str]]:
    """(display name, address) of every address in these header values, exactly as
    :func:`email.utils.getaddresses` reads them; the plain form that nearly every post has
    (see ``_PLAIN_ITEM``) without its parser, which costs more than the rest of a rule."""
    joined = ", ".join(values)
    found: list[tuple[str, str]] = []
    for item in joined.split(","):
        m = _PLAIN_ITEM.fullmatch(item.strip(" \t\r\n"))
        if m is None:
            return getaddresses(values)
        if m.group("bare"):
            found.append(("", m.group("bare")))
        else:
            found.append((" ".join(m.group("name").split()), m.group("addr")))
    return found


def _one_address(value: str, field: str) -> tuple[str, str]:
    """(display name, address) of the single address in ``value``, or raise naming ``field``.

    ``parseaddr`` alone keeps the first of ``a@x, b@x`` and glues ``a@x junk`` into one
    address; either would silently subscribe someone other than who was meant.
    """
    text = value.strip()
    pairs = getaddresses([text])
    if len(pairs) != 1 or not pairs[0][1] or pairs[0][1] not in text:
        raise InvalidInput(field, _("not an email address: {value!r}").format(value=value))
    return pairs[0]


def normalize_email(value: str, field: str = "email") -> str:
    """Check an address a person typed and return it lower-cased, or raise naming ``field``."""
    _name, addr = _one_address(value, field)
    if addr.count("@") != 1:
        raise InvalidInput(field, _("not an email address: {value!r}").format(value=value))
    local, domain = addr.rsplit("@", 1)
    if not _LOCAL_RE.match(local) or local.startswith(".") or ".." in local:
        raise InvalidInput(
            field, _("the part before @ is not valid: {value!r}").format(value=value)
        )
    check_domain(domain, field)
    return f"{local}@{domain}".lower()


def parse_member_line(line: str, field: str = "email") -> tuple[str, str]:
    """``"Anne Person <anne@example.com>"`` or ``anne@example.com`` → (email, display name)."""
    name, _addr = _one_address(line, field)
    # normalize_email(line): its errors quote the whole line, not the fragment parsed from it
    return normalize_email(line, field), name.strip()


def check_domain(value: str, field: str = "mail_host") -> str:
    domain = value.strip().lower().rstrip(".")
    labels = domain.split(".")
    if not domain or len(domain) > 253 or not all(_LABEL_RE.match(label) for label in labels):
        raise InvalidInput(field, _("not a valid domain name: {value!r}").format(value=value))
    return domain


def check_list_name(value: str, field: str = "list_name") -> str:
    name = value.strip().lower()
    if not _LIST_NAME_RE.match(name):
        raise InvalidInput(
            field,
            _(
                "not a valid list name: {value!r} (use letters, digits, '.', '_' and '-', "
                "starting and ending with a letter or digit)"
            ).format(value=value),
        )
    m = _SUFFIX_RE.match(name)
    if m:
        raise InvalidInput(
            field,
            _("a list name may not end in '-{suffix}': that is a sub-address of every list").format(
                suffix=m.group("sub")
            ),
        )
    return name


def split_fqdn_listname(value: str, field: str = "fqdn_listname") -> tuple[str, str]:
    """``team@lists.example`` → (list_name, mail_host), checked."""
    if value.count("@") != 1:
        raise InvalidInput(field, _("expected LIST@DOMAIN, got {value!r}").format(value=value))
    name, domain = value.split("@")
    return check_list_name(name, field), check_domain(domain, field)


def listed(address: str, entries: Iterable[str]) -> bool:
    """``address`` is in a Mailman address list: an exact address (any case) or a
    ``^regex`` entry (matched case-insensitively; a broken regex matches nothing)."""
    address = address.lower()
    for entry in entries:
        entry = entry.strip()
        if not entry:
            continue
        if entry.startswith("^"):
            if regexes.match(entry, address, "an address list"):
                return True
        elif entry.lower() == address:
            return True
    return False
