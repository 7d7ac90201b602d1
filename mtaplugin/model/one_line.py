"""One-line list settings: no line break and no control character, on every surface.

A list's ``display_name``, ``subject_prefix``, ``description``, ``reply_to_address`` ...
end up in header fields of every copy (Reply-To:, Subject:, List-Id:, From: of an
anonymous list), DKIM-signed with the site's key.  A CR or LF in one would add a header
field of the owner's choosing; a NUL or a bare CR breaks the encoding of every post.

Which settings are one line comes from the table itself (:func:`one_line_settings`): every
text column of ``mailing_lists`` that is not free text (``String``, not ``Text``, not an
enum), and every text inside a JSON setting (the lines of ``acceptable_aliases``,
``filter_types``, ``dmarc_addresses`` ...).  A new column is covered the day it is added.
Two JSON settings hold some free text: a topic's regular expression may span lines
(Mailman 2.1: each line an alternative), only its name and description are one line; the
refusal texts are SMTP reply wording, made one line where they are used
(:func:`mtaplugin.posting.pipeline.refusal_text`).

The check (:func:`check_setting`) runs where each surface parses its values (REST and the
CLI's ``lists set``, the web form) and, as the last word, on every write of the model
attribute (imports, ``lists create``, anything else), raising
:class:`~mtaplugin.errors.InvalidInput` naming the setting.

``reply_to_address`` is also checked as one address (it was once an address or a
``^regex``; a regex makes no Reply-To:, so it is refused).
"""

from __future__ import annotations

import re
from functools import cache

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _

#: C0 controls but TAB, DEL, NEL and the Unicode line and paragraph separators
_NOT_ONE_LINE = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")
#: hidden or structured columns that are not a person's text, and free-text JSON
_NOT_TEXT = frozenset({"archivers", "refusal_texts"})


def problem(value: str) -> str | None:
    """Why ``value`` is not one line of text (None when it is)."""
    found = _NOT_ONE_LINE.search(value)
    if found is None:
        return None
    return _("must be one line without control characters (found {char} at character {n})").format(
        char=f"U+{ord(found.group()):04X}", n=found.start() + 1
    )


def check(field: str, value: str) -> str:
    """``value``, or :class:`InvalidInput` naming ``field`` when it is not one line."""
    why = problem(value)
    if why is not None:
        raise InvalidInput(field, why)
    return value


def _topic_texts(value: object) -> list[str]:
    """A topic's name and description (its regex may span lines)."""
    rows = value if isinstance(value, list | tuple) else []
    texts: list[str] = []
    for row in rows:
        if isinstance(row, dict):
            texts += _texts([row.get("name"), row.get("description")])
        elif isinstance(row, list | tuple):
            texts += _texts([row[0] if row else "", row[2] if len(row) > 2 else ""])
    return texts


def _texts(value: object) -> list[str]:
    """Every text in a setting's value (a text, or JSON: lists and objects, keys too)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*_texts(k), *_texts(v))]
    if isinstance(value, list | tuple):
        return [t for item in value for t in _texts(item)]
    return []


@cache
def one_line_settings() -> frozenset[str]:
    """The list settings (``mailing_lists`` columns) whose texts must be one line."""
    from sqlalchemy import JSON, Enum, String, Text

    from mtaplugin.model import MailingList

    names = set()
    for column in MailingList.__table__.columns:
        kind = column.type
        if column.key in _NOT_TEXT or isinstance(kind, Enum | Text):
            continue
        if isinstance(kind, String | JSON):
            names.add(column.key)
    return frozenset(names)


def check_setting(name: str, value: object) -> object:
    """``value`` of list setting ``name``, or :class:`InvalidInput` naming ``name`` when a
    text of it is not one line (or ``reply_to_address`` is not one address)."""
    if name not in one_line_settings():
        return value
    for text in _topic_texts(value) if name == "topics" else _texts(value):
        check(name, text)
    if name == "reply_to_address" and isinstance(value, str) and value.strip():
        from mtaplugin.vocabulary.addresses import normalize_email

        normalize_email(value, name)
    return value


def check_input(name: str, values: object) -> object:
    """The values of setting ``name`` as a form or a REST body sent them, checked before
    they are parsed (a parser may cut a text at a line break and keep the rest): as
    :func:`check_setting`, but for ``topics``, whose input is written in lines."""
    return values if name == "topics" else check_setting(name, values)
