"""Destructive commands ask first: they show what would go, then go on only with
``--yes`` (scripts) or when the person at a terminal types the name of what goes.

Without ``--yes`` and without a terminal (cron, a pipe), nothing is changed and the
command exits 1 saying so: a script that forgot ``--yes`` loses nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mtaplugin import config
from mtaplugin.cli.common import scope
from mtaplugin.i18n import _

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

#: exit status of a destructive command that was not confirmed
NOT_CONFIRMED = 1


def add_yes(p: argparse.ArgumentParser) -> None:
    """``--yes``: do it without asking (for scripts)."""
    p.add_argument("-y", "--yes", action="store_true", help=_("do it without asking (for scripts)"))


def confirmed(
    args: argparse.Namespace,
    what: Sequence[str],
    name: str,
    *,
    ask: Callable[[str], str] | None = None,
    interactive: Callable[[], bool] | None = None,
) -> bool:
    """Print ``what`` would go; True when ``--yes`` was given, or when the person at the
    terminal types ``name``.  Otherwise say that nothing was changed and return False."""
    print(_("This removes:"), file=sys.stderr)
    for line in what:
        print(f"  {line}", file=sys.stderr)
    if getattr(args, "yes", False):
        return True
    on_terminal = interactive() if interactive is not None else sys.stdin.isatty()
    if on_terminal:
        try:
            answer = (ask or input)(_("Type {name} to go on: ").format(name=name))
        except EOFError:
            answer = ""
        if answer.strip().lower() == name.strip().lower():
            return True
        print(_("nothing was changed: the name typed did not match"), file=sys.stderr)
        return False
    print(_("nothing was changed: give --yes to do it (no terminal to ask on)"), file=sys.stderr)
    return False


def remove_confirmed(
    args: argparse.Namespace,
    settings: config.Settings,
    what: Sequence[str],
    name: str,
    remove: Callable[[Session], object],
    done: str,
) -> int:
    """A removal command's end: once :func:`confirmed`, ``remove`` in one transaction and
    say ``done``; the command's exit status."""
    if not confirmed(args, what, name):
        return NOT_CONFIRMED
    with scope(settings) as s:
        remove(s)
    print(done)
    return 0
