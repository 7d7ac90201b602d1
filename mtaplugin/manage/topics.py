"""Topics (Mailman 2.1), as the web, REST and email commands set them.

The list's ``topics`` are ``[name, regex, description]`` rows; a topic's name is one word
(no spaces, commas or ``|``: members name topics in ``set topics a b`` and the copy's
``X-Topics:`` lists them with commas), unique on the list (case-insensitively), and its
expression must compile.  As one text line (the web form, REST form data) a topic is
``name | description | regex``: the regex last, so it may hold ``|`` itself.

A member chooses among the list's topics (:func:`choose`); an empty choice means every
post.  Whether posts that match no topic come too is ``receive_nonmatching_topics``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.model import MailingList, Member
from mtaplugin.vocabulary.topics import check_regex

FIELD = "topics"
_NAME = re.compile(r"^[^\s,|]{1,64}$")


def topic_row(value: Any, field: str = FIELD) -> list[str]:
    """One topic from REST or a form: an object (name, regex, description), a list of
    two or three texts, or a line ``name | description | regex``."""
    if isinstance(value, Mapping):
        parts = [value.get("name", ""), value.get("regex", ""), value.get("description", "")]
    elif isinstance(value, (list, tuple)) and len(value) in (2, 3):
        parts = [*value, ""][:3]
    elif isinstance(value, str):
        pieces = [p.strip() for p in value.split("|", 2)]
        if len(pieces) != 3:
            raise InvalidInput(
                field,
                _("write each topic as name | description | regex, not {line!r}").format(
                    line=value
                ),
            )
        parts = [pieces[0], pieces[2], pieces[1]]
    else:
        raise InvalidInput(field, _("expected a topic: name, regex and description"))
    if not all(isinstance(p, str) for p in parts):
        raise InvalidInput(field, _("a topic's name, regex and description are texts"))
    name, regex, description = (str(p).strip() for p in parts)
    if not _NAME.match(name):
        raise InvalidInput(
            field,
            _("bad topic name {name!r}: one word of at most 64 characters, no commas").format(
                name=name
            ),
        )
    problem = check_regex(regex)
    if problem is not None:
        raise InvalidInput(
            field,
            _("bad regular expression for topic {name}: {problem}").format(
                name=name, problem=problem
            ),
        )
    return [name, regex, description]


def parse_topics(values: Iterable[Any], field: str = FIELD) -> list[list[str]]:
    rows = [topic_row(v, field) for v in values if not (isinstance(v, str) and not v.strip())]
    seen: set[str] = set()
    for name, _regex, _desc in rows:
        if name.lower() in seen:
            raise InvalidInput(field, _("topic {name} is given twice").format(name=name))
        seen.add(name.lower())
    return rows


def as_line(row: list[str]) -> str:
    name, regex, description = [*row, "", ""][:3]
    return f"{name} | {description} | {regex}"


def as_object(row: list[str]) -> dict[str, str]:
    name, regex, description = [*row, "", ""][:3]
    return {"name": name, "regex": regex, "description": description}


def names(mlist: MailingList) -> list[str]:
    return [str(row[0]) for row in mlist.topics or [] if row]


def choose(mlist: MailingList, member: Member, wanted: Iterable[str]) -> list[str]:
    """Set the topics ``member`` wants (names of the list's topics, any case; none: every
    post); the names as the list spells them."""
    wanted = [w.strip() for w in wanted if w.strip()]
    if wanted and not mlist.topics_enabled:
        raise InvalidInput(FIELD, _("{list} has no topics").format(list=mlist.fqdn_listname))
    known = {n.lower(): n for n in names(mlist)}
    unknown = [w for w in wanted if w.lower() not in known]
    if unknown:
        raise InvalidInput(
            FIELD,
            _("no such topic on {list}: {names}; the topics are: {known}").format(
                list=mlist.fqdn_listname,
                names=", ".join(unknown),
                known=", ".join(known.values()) or _("(none)"),
            ),
        )
    chosen = list(dict.fromkeys(known[w.lower()] for w in wanted))
    member.topics = chosen
    return chosen
