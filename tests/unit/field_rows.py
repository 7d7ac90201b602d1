"""The field level of the access matrix (tests/unit/test_field_matrix.py): for every field a
REST write takes, who may set it and which values are refused.

The fields themselves are not listed by hand where the code has a table: the list settings
come from the REST config resource's own table (``ATTRIBUTES.writable``), with a kind read
from the column as the resource reads it; the template URIs from ``TEMPLATE_NAMES``; the
preferences from ``PREFERENCE_KEYS``; the roster sources from ``sources.WRITABLE``.  Every
other route's fields are what its responder passes to ``Params.only`` -- the test records
them from the running app and fails on a field without a row here (or a row for a field
that went).

A row: the rule of the access matrix (tests/unit/test_access_matrix.py) that says who may
set the field, a value that is accepted (None: only the door is tried, with any value),
the values refused with 400 naming the field (nothing changed), and the values only the
site admin may give (anybody else: refused, nothing changed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import JSON, Boolean, Enum, Integer, Interval, String, Text, inspect

from mtaplugin.api.resources.config import ATTRIBUTES
from mtaplugin.manage.patterns import ADDRESS_PATTERN_SETTINGS
from mtaplugin.model import MailingList
from mtaplugin.model.preferences import PREFERENCE_KEYS


@dataclass(frozen=True)
class Field:
    rule: str
    good: str | None = None
    bad: tuple[str, ...] = ()
    site_only: tuple[str, ...] = ()


@dataclass(frozen=True)
class Route:
    """``target``: whose object the path names (own_list, other_domain; "site" for none);
    ``ok``: the answer to a good value; ``base``: the other fields the write needs."""

    target: str
    fields: dict[str, Field]
    ok: int = 204
    base: str = ""
    #: fields whose good value answers otherwise (201, 202...)
    ok_for: dict[str, int] = field(default_factory=dict)
    #: rows generated from a table (the same row for each name): each is tried by the
    #: roles at the rule's edge only (see test_field_matrix.edge_roles)
    generated: bool = False


def bool_field(rule: str, good: str = "true") -> Field:
    return Field(rule, good, ("maybe",))


def preferences(rule: str) -> dict[str, Field]:
    found = {
        "acknowledge_posts": bool_field(rule),
        "hide_address": bool_field(rule, "false"),
        "receive_list_copy": bool_field(rule, "false"),
        "receive_own_postings": bool_field(rule, "false"),
        "delivery_mode": Field(rule, "plaintext_digests", ("pigeon",)),
        "delivery_status": Field(rule, "by_user", ("asleep",)),
        "preferred_language": Field(rule, "de", ("xx-nowhere",)),
    }
    assert set(found) == set(PREFERENCE_KEYS), "a preference without a row"
    return found


# --- the list settings, from the config resource's table ------------------------------------
#: settings whose values are checked beyond their column's kind
_CONFIG_SPECIAL: dict[str, Field] = {
    "moderator_password": Field("list_admin", "a new moderator password"),
    "reply_to_address": Field("list_admin", "team@example.org", ("not an address",)),
    "preferred_language": Field("list_admin", "fr", ("xx-nowhere",)),
    "refusal_texts": Field("list_admin", '{"banned": "Go away."}', ('["a list"]', "{not json")),
    "topics": Field("list_admin", "[]", ("not a list of topics",)),
    "topics_bodylines_limit": Field("list_admin", "-1", ("x", "-2")),
    "display_name": Field("list_admin", "Renamed", ("x" * 300,)),
    # one of /system/pipelines (as Mailman checks it)
    "posting_pipeline": Field("list_admin", "default-posting-pipeline", ("x",)),
}


def config_field(name: str) -> Field:
    """The row of list setting ``name``: its kind, as the REST resource parses it."""
    if name in _CONFIG_SPECIAL:
        return _CONFIG_SPECIAL[name]
    kind = inspect(MailingList).columns[name].type
    if isinstance(kind, Boolean):
        return bool_field("list_admin")
    if isinstance(kind, Integer):
        return Field("list_admin", "3", ("x", "-1"))
    if isinstance(kind, Interval):
        return Field("list_admin", "2d", ("soon", "99999d"))
    if isinstance(kind, Enum) and kind.enum_class is not None:
        first = next(iter(kind.enum_class))
        return Field("list_admin", str(first.value), ("no-such-choice",))
    if isinstance(kind, JSON):
        if name in ADDRESS_PATTERN_SETTINGS:
            return Field("list_admin", "^.*@example\\.org$", ("not an address", "^(unclosed"))
        return Field("list_admin", "text/html")
    if isinstance(kind, String) and kind.length:
        return Field("list_admin", "x", ("x" * (kind.length + 1),))
    if isinstance(kind, (String, Text)):
        return Field("list_admin", "A text.")
    raise AssertionError(f"no row for the list setting {name} ({kind!r})")


def config_fields() -> dict[str, Field]:
    return {name: config_field(name) for name in ATTRIBUTES.writable}
