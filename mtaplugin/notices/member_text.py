"""One notice text for many members: rendered once per list and language, then filled in
with each member's address.

A mass subscription sends every new member the list's welcome; its text differs from one
member to the next only by the member's address (``user_email``).  :func:`plan` renders
the notice once with a stand-in for the address (:data:`SENTINEL`) and
:meth:`MemberText.fill` puts each member's address in its place: a few string
replacements instead of a template render.

That is exact only where the address goes into the text as it is, so :func:`plan` reads
the template's tree first (:func:`substitutable`) and gives None (render for each member,
as before) unless every use of ``user_email`` is written out unchanged: ``{{ user_email
}}``, or a variable of a ``{% trans %}`` block.  Such a use may sit inside one ``{%
filter wordwrap(...) %}`` block (the built-in welcome and goodbye do): the filter wraps
each line on its own, so the lines without the address are wrapped once, and a line with
it is wrapped for each member, with the member's address in it
(:func:`mtaplugin.notices.wrap.wrap_line`).  A text in Mailman's ``$variable`` syntax is
a single substitution, exact as it is.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes
from sqlalchemy.orm import Session

from mtaplugin.i18n import normalize_language
from mtaplugin.model import MailingList
from mtaplugin.notices.templates import (
    builtin,
    chosen_text,
    compiled,
    environment,
    is_mailman_syntax,
    notice_values,
    render_text,
)
from mtaplugin.notices.wrap import PLANNER, wrap_line

#: what stands for the member's address while the text is planned (private-use
#: characters, which no template, list setting or address holds: checked)
SENTINEL = "\ue000user_email\ue001"
#: a wrapped block that holds the address, in the planned text: ``\ue002<n>\ue003``
_WRAPPED = re.compile("\ue002([0-9]+)\ue003")
_PRIVATE = re.compile("[\ue000-\ue003]")
#: the functions a ``{% trans %}`` block calls; its variables are their keywords
_GETTEXT = frozenset({"gettext", "ngettext", "pgettext", "npgettext"})
#: what may hold a use of ``user_email``: the text goes out unchanged through these
_PASSES = (nodes.Template, nodes.Output, nodes.If, nodes.For)
#: what a template may not hold at all: another template could use the address
_FOREIGN = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)


@dataclass(frozen=True)
class _Wrapped:
    """A ``wordwrap`` block that holds the address: its lines, wrapped already, or
    (``pending``) to wrap once the address is in."""

    lines: tuple[str, ...]
    pending: tuple[bool, ...]
    width: int
    break_long_words: bool
    newline: str
    break_on_hyphens: bool

    def fill(self, email: str) -> str:
        args = (self.width, self.break_long_words, self.newline, self.break_on_hyphens)
        return self.newline.join(
            wrap_line(line.replace(SENTINEL, email), *args) if todo else line
            for line, todo in zip(self.lines, self.pending, strict=True)
        )


@dataclass(frozen=True)
class MemberText:
    """A notice's text with a place for the member's address."""

    parts: tuple[str | _Wrapped, ...]

    def fill(self, email: str) -> str:
        """The text ``email`` gets (an address as :func:`plain` allows)."""
        return "".join(
            part.replace(SENTINEL, email) if isinstance(part, str) else part.fill(email)
            for part in self.parts
        )


def plan(
    name: str,
    language: str | None,
    *,
    session: Session | None,
    mlist: MailingList,
    **variables: Any,
) -> MemberText | None:
    """Notice ``name`` of ``mlist`` in ``language`` (as
    :func:`~mtaplugin.notices.templates.render` chooses it) ready for any member's address;
    None when its text uses the address in a way only a render per member gets right, or
    does not render."""
    lang = normalize_language(language)
    values = notice_values(mlist, "", lang, {**variables, "user_email": SENTINEL})
    if any(_PRIVATE.search(str(v)) for k, v in values.items() if k != "user_email"):
        return None
    text, shipped, shipped_lang = chosen_text(session, mlist, name, lang)
    try:
        if text is not None:
            if _PRIVATE.search(text):
                return None
            if is_mailman_syntax(text):
                return MemberText((render_text(text, lang, values),))
            source, template = text, compiled(text, lang)
        else:
            template = builtin(shipped, shipped_lang)
            source = _builtin_source(f"{shipped}.txt")
        if not substitutable(source):
            return None
        wrapped: list[_Wrapped] = []
        token = PLANNER.set(functools.partial(_record, wrapped))
        try:
            out = template.render(values)
        finally:
            PLANNER.reset(token)
    except Exception:  # the render for each member says why (and falls back as it does)
        return None
    pieces = _WRAPPED.split(out)
    # split() gives text, number, text, number, ..., text
    parts = [wrapped[int(p)] if i % 2 else p for i, p in enumerate(pieces)]
    return MemberText(tuple(p for p in parts if p != ""))


def _record(
    wrapped: list[_Wrapped],
    text: str,
    width: int,
    break_long_words: bool,
    newline: str,
    break_on_hyphens: bool,
) -> str | None:
    """The ``wordwrap`` filter while a text is planned: a block without the address is
    wrapped now; one with it is kept, each line wrapped already or left to wrap."""
    if SENTINEL not in text:
        return None
    args = (width, break_long_words, newline, break_on_hyphens)
    lines = text.splitlines()
    pending = tuple(SENTINEL in line for line in lines)
    done = tuple(
        line if todo else wrap_line(line, *args) for line, todo in zip(lines, pending, strict=True)
    )
    wrapped.append(_Wrapped(done, pending, *args))
    return f"\ue002{len(wrapped) - 1}\ue003"


@functools.cache
def _builtin_source(filename: str) -> str:
    loader = environment("en").loader
    assert loader is not None
    return loader.get_source(environment("en"), filename)[0]


@functools.lru_cache(maxsize=256)
def substitutable(source: str) -> bool:
    """Every use of ``user_email`` in template ``source`` writes the address out unchanged
    (see the module's doc), in at most one ``wordwrap`` block; nothing else can see it."""
    tree = environment("en").parse(source)
    if any(True for _ in tree.find_all(_FOREIGN)):
        return False
    return _uses_pass(tree, ())


def _uses_pass(node: nodes.Node, above: tuple[nodes.Node, ...]) -> bool:
    if isinstance(node, nodes.Macro) and node.name in _GETTEXT:
        return False
    for child in node.iter_child_nodes():
        if isinstance(child, nodes.Name):
            if child.name in _GETTEXT and child.ctx != "load":
                return False  # gettext replaced by the template's own
            if child.name == "user_email" and not _written_out(child, (*above, node)):
                return False
        elif not _uses_pass(child, (*above, node)):
            return False
    return True


def _written_out(name: nodes.Name, above: tuple[nodes.Node, ...]) -> bool:
    """``name`` (a use of ``user_email``, its ancestors ``above``, nearest last) is written
    out as it is: an output, or a ``{% trans %}`` variable; and nothing around it but
    outputs, ifs, loops and one ``wordwrap`` filter block."""
    if name.ctx != "load":
        return False
    rest = list(above)
    if isinstance(rest[-1], nodes.Keyword):
        call = rest[-2]
        if not (
            isinstance(call, nodes.Call)
            and isinstance(call.node, nodes.Name)
            and call.node.name in _GETTEXT
            and isinstance(rest[-3], nodes.Output)
        ):
            return False
        rest = rest[:-2]
    if not isinstance(rest[-1], nodes.Output):
        return False
    blocks = [n for n in rest if isinstance(n, nodes.FilterBlock)]
    if len(blocks) > 1 or (blocks and blocks[0].filter.name != "wordwrap"):
        return False
    if blocks and blocks[0].filter.node is not None:
        return False  # a chain of filters
    return all(isinstance(n, (*_PASSES, nodes.FilterBlock)) for n in rest)
