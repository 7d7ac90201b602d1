"""Topics (Mailman 2.1): which of a list's topics a post is about, and which members want it.

A topic is a name, a regular expression and a description.  The expression may span
several lines: any line may match (MM2.1 joins them with ``|``); it is searched,
case-insensitively and in linear time (:mod:`mtaplugin.regexes`), in the post's
``Subject:`` and ``Keywords:`` and in the ``Subject:`` and ``Keywords:`` lines found among
the first ``topics_bodylines_limit`` non-blank body lines (0: none, a negative number: the
whole body), as Mailman 2.1's Tagger does.

Who gets a post (MM2.1's CalcRecips):

- a member who chose no topic gets every post;
- a post that matched topics goes to the members who chose one of them;
- a post that matched none goes to the members who chose topics only when they also
  asked for posts that match no topic (``receive_nonmatching_topics``).

Pure code: the snapshot carries the compiled topics and the members' choices.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from email.header import decode_header, make_header
from typing import TYPE_CHECKING

from mtaplugin.regexes import Pattern, compile_pattern, problem

if TYPE_CHECKING:
    from mtaplugin.vocabulary.envelope import Post

log = logging.getLogger(__name__)

#: the header each copy gets, naming the post's topics
X_TOPICS = "X-Topics"
#: the body lines read when a list says nothing else (MM2.1's default)
DEFAULT_BODYLINES = 5
_BODY_FIELD = re.compile(r"^\s*(?:subject|keywords)\s*:(?P<value>.*)$", re.IGNORECASE)
#: "the whole body", for a negative limit
_ALL_LINES = 10_000


@dataclass(frozen=True)
class Topic:
    name: str
    pattern: Pattern
    description: str = ""


@dataclass(frozen=True)
class TopicChoice:
    """What a member chose: the topics wanted, and whether posts that match none come too."""

    topics: frozenset[str]
    receive_nonmatching: bool = False


def joined_pattern(regex: str) -> str:
    """The topic's expression: its non-blank lines as alternatives (MM2.1)."""
    lines = [line.strip() for line in regex.splitlines() if line.strip()]
    return "|".join(f"(?:{line})" for line in lines) if len(lines) > 1 else "".join(lines)


def check_regex(regex: str) -> str | None:
    """The problem with a topic's expression (translated), or None."""
    if not joined_pattern(regex):
        return "empty"
    return problem(joined_pattern(regex))


def compile_topics(rows: Iterable[Sequence[str]], what: str) -> tuple[Topic, ...]:
    """The list's topics, compiled; a broken row is logged and left out (the settings
    surfaces refuse one, but hand-written SQL may not)."""
    topics: list[Topic] = []
    for row in rows:
        if len(row) < 2 or not str(row[0]).strip():
            log.warning("ignoring a topic without a name or expression in %s", what)
            continue
        name, regex = str(row[0]).strip(), str(row[1])
        problem = check_regex(regex)
        if problem is not None:
            log.warning("ignoring topic %r in %s: %s", name, what, problem)
            continue
        desc = str(row[2]) if len(row) > 2 else ""
        topics.append(Topic(name, compile_pattern(joined_pattern(regex)), desc))
    return tuple(topics)


def _decoded(value: str) -> str:
    """A header value unfolded, its RFC 2047 encoded words decoded."""
    unfolded = re.sub(r"\r?\n(?=[ \t])", "", value)
    try:
        return str(make_header(decode_header(unfolded)))
    except (UnicodeDecodeError, LookupError, ValueError):
        return unfolded


def match_lines(post: Post, bodylines_limit: int) -> list[str]:
    """The lines a post's topics are matched in."""
    lines = [_decoded(v) for v in (*post.get_all("Subject"), *post.get_all("Keywords"))]
    if bodylines_limit != 0:
        limit = _ALL_LINES if bodylines_limit < 0 else bodylines_limit
        # Read as a forgiving header block (MM2.1): only Subject: and Keywords: lines count.
        for line in post.first_text_lines(limit):
            found = _BODY_FIELD.match(line)
            if found:
                lines.append(found["value"])
    return [line for line in lines if line.strip()]


def post_topics(post: Post, topics: Sequence[Topic], bodylines_limit: int) -> tuple[str, ...]:
    """The names of the topics ``post`` matches, in the list's order."""
    if not topics:
        return ()
    lines = match_lines(post, bodylines_limit)
    return tuple(t.name for t in topics if any(t.pattern.search(line) for line in lines))


def wants(choice: TopicChoice | None, hits: Sequence[str]) -> bool:
    """Whether a member with ``choice`` gets a post that matched ``hits``."""
    if choice is None or not choice.topics:
        return True
    if hits:
        return not choice.topics.isdisjoint(hits)
    return choice.receive_nonmatching


def narrow(
    members: Iterable[str], choices: Mapping[str, TopicChoice], hits: Sequence[str]
) -> tuple[str, ...]:
    """The members who get a post that matched ``hits``."""
    if not choices:
        return tuple(members)
    return tuple(m for m in members if wants(choices.get(m), hits))
