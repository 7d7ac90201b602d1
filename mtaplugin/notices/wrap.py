"""Line wrapping for notices in every language: the ``wordwrap`` filter of the templates.

Jinja2's own ``wordwrap`` breaks lines only at spaces and counts characters.  Japanese and
Chinese put no spaces between words, and their characters are twice as wide on a
terminal, so a translated paragraph would stay one line of several hundred columns.  This
filter wraps a line that holds wide (East Asian) characters by display columns, breaking
between any two wide characters, never inside a run of narrow ones (an address, a URL, a
Latin word), never before closing punctuation nor after opening punctuation (the basic
Japanese *kinsoku* rules, which Chinese follows too).  Lines without wide characters are
wrapped exactly as Jinja2's filter does.
"""

from __future__ import annotations

import textwrap
import unicodedata
from collections.abc import Callable
from contextvars import ContextVar

#: may not begin a line
_NO_START = frozenset(
    "、。，．・：；？！）〕］｝〉》」』】〙〗〟’”｠»ー々ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ,.:;?!)]}%"
)
#: may not end a line
_NO_END = frozenset("（〔［｛〈《「『【〘〖〝‘“｟«([{")


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def _width(text: str) -> int:
    return sum(2 if _wide(c) else 1 for c in text)


def _tokens(line: str) -> list[str]:
    """Runs of narrow non-space characters, runs of spaces, and single wide characters."""
    tokens: list[str] = []
    for char in line:
        if (
            tokens
            and not _wide(char)
            and not _wide(tokens[-1][-1])
            and (char == " ") == (tokens[-1][-1] == " ")
        ):
            tokens[-1] += char
        else:
            tokens.append(char)
    return tokens


def _glue(tokens: list[str]) -> list[str]:
    """Tokens joined where the line may not break: before closing punctuation, after
    opening punctuation."""
    units: list[str] = []
    for token in tokens:
        joined = units and not units[-1].endswith(" ") and token[0] != " "
        if joined and (token[0] in _NO_START or units[-1][-1] in _NO_END):
            units[-1] += token
            continue
        units.append(token)
    return units


def wrap_wide(line: str, width: int) -> list[str]:
    """``line`` (with wide characters) as lines of at most ``width`` columns (a unit that
    cannot break and is longer stays whole); spaces at a break are dropped."""
    lines: list[str] = []
    current = ""
    for unit in _glue(_tokens(line)):
        if unit.startswith(" "):
            if not lines and not current:  # the line's own indentation
                current = unit
            elif current and _width(current) + _width(unit) < width:
                current += unit
            elif current:
                lines.append(current.rstrip(" "))
                current = ""
            continue
        if current and _width(current) + _width(unit) > width:
            lines.append(current.rstrip(" "))
            current = ""
        current += unit
    if current.rstrip(" "):
        lines.append(current.rstrip(" "))
    return lines


def wrap_line(
    line: str,
    width: int = 79,
    break_long_words: bool = True,
    newline: str = "\n",
    break_on_hyphens: bool = True,
) -> str:
    """One line of :func:`wordwrap`'s text, wrapped (the lines joined by ``newline``)."""
    if line.isascii():
        if len(line) <= width and not line[-1:].isspace():
            return line  # (what textwrap gives a line that fits, without its scan)
    elif any(_wide(c) for c in line):
        return newline.join(wrap_wide(line, width))
    return newline.join(
        textwrap.wrap(
            line,
            width=width,
            expand_tabs=False,
            replace_whitespace=False,
            break_long_words=break_long_words,
            break_on_hyphens=break_on_hyphens,
        )
    )


#: what wraps a text while a notice is planned for many members
#: (:mod:`mtaplugin.notices.member_text`): it gets :func:`wordwrap`'s text and arguments
#: and returns what the filter writes instead, or None to wrap the text now
Planner = Callable[[str, int, bool, str, bool], str | None]
PLANNER: ContextVar[Planner | None] = ContextVar("mtaplugin_wrap_planner", default=None)


def wordwrap(
    text: str,
    width: int = 79,
    break_long_words: bool = True,
    wrapstring: str | None = None,
    break_on_hyphens: bool = True,
) -> str:
    """Jinja2's ``wordwrap`` (same arguments), aware of wide characters.  Each line of
    ``text`` is wrapped on its own (:func:`wrap_line`)."""
    newline = "\n" if wrapstring is None else wrapstring
    planner = PLANNER.get()
    if planner is not None:
        planned = planner(text, width, break_long_words, newline, break_on_hyphens)
        if planned is not None:
            return planned
    return newline.join(
        wrap_line(line, width, break_long_words, newline, break_on_hyphens)
        for line in text.splitlines()
    )
