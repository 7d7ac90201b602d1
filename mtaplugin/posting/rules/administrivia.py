"""administrivia: a post that looks like an email command (``unsubscribe`` sent to the
list instead of to list-request) is held, so that it does not reach every member.

As in Mailman, the Subject and the first ``email_commands_max_lines`` non-blank lines of
the first text/plain part are checked: a line whose first word is a command and whose
number of arguments fits that command."""

from __future__ import annotations

import re
from functools import partial

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot

ADMINISTRIVIA = "administrivia"

#: command → (fewest, most) arguments (Mailman's rules/administrivia.py, plus the MM2 ones)
COMMANDS: dict[str, tuple[int, int]] = {
    "confirm": (1, 1),
    "help": (0, 0),
    "info": (0, 0),
    "lists": (0, 0),
    "options": (0, 0),
    "password": (2, 2),
    "remove": (0, 0),
    "set": (3, 3),
    "subscribe": (0, 3),
    "unsubscribe": (0, 2),
    "join": (0, 3),
    "leave": (0, 2),
    "who": (0, 0),
}


#: a line that starts with a command's name (then :func:`looks_like_command` counts its
#: arguments): the usual post has none, and its lines are then looked at in one search.
#: (It finds every line whose first word, lower-cased, is a command: ``re.IGNORECASE``
#: matches at least what ``str.lower`` folds, and ``\s`` is ``str.split``'s white space.)
_COMMAND_START = re.compile(
    r"^\s*(?:" + "|".join(COMMANDS) + r"):*(?:\s|$)", re.IGNORECASE | re.MULTILINE
)


def looks_like_command(line: str) -> bool:
    first = line.split(maxsplit=1)
    if not first:
        return False
    bounds = COMMANDS.get(first[0].lower().rstrip(":"))
    if bounds is None:
        return False  # (the usual line: its words are not counted)
    arguments = len(first[1].split()) if len(first) > 1 else 0
    return bounds[0] <= arguments <= bounds[1]


def administrivia(ctx: PostContext) -> Hit | None:
    if not ctx.mlist.administrivia:
        return None
    return _commands(ctx.site.email_commands_max_lines, ctx)


def prepare(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off unless the list has ``administrivia``."""
    return (
        partial(_commands, site.email_commands_max_lines) if snapshot.mlist.administrivia else None
    )


def _commands(max_lines: int, ctx: PostContext) -> Hit | None:
    subject = ctx.post.subject.strip()
    if subject and looks_like_command(subject):
        return Hit(ADMINISTRIVIA, Action.defer, _("the Subject: looks like an email command"))
    lines = ctx.post.first_text_lines(max_lines)
    if not _COMMAND_START.search("\n".join(lines)):
        return None
    for line in lines:
        if looks_like_command(line):
            return Hit(ADMINISTRIVIA, Action.defer, _("the body looks like an email command"))
    return None
