"""What every noun of the ``mtaplugin`` command shares: the handler type, a database
session scope, who acts, and the two ways to add a command (a group with actions, or one
action)."""

from __future__ import annotations

import argparse
import getpass
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from mtaplugin import config
from mtaplugin.i18n import _

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtaplugin.model import MailingList

Handler = Callable[[argparse.Namespace, config.Settings], int]
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
T = TypeVar("T")
R = TypeVar("R")


class Parser(argparse.ArgumentParser):
    """The parser of the command and of every noun and action: an action takes its options
    anywhere on the line, as people type them (``members add LIST --no-welcome-msg a@x
    b@y``): argparse's intermixed parsing, which reads the options first and then the
    positionals.  A parser with sub-commands (the command, a noun) parses as usual, as
    argparse cannot intermix there; it hands the rest of the line to the action's parser,
    which intermixes."""

    _intermixing = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._intermixing or self._subparsers is not None:
            return super().parse_known_args(args, namespace)
        # parse_known_intermixed_args calls parse_known_args twice: those are plain calls
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def scope(settings: config.Settings) -> AbstractContextManager[Session]:
    """One transaction on the configured database: committed on success."""
    from mtaplugin.db import session_scope
    from mtaplugin.wiring import build

    return session_scope(build(settings).sessions)


def actor(args: argparse.Namespace) -> str:
    """Who acts, for the audit log: ``--as EMAIL``, or the user at the terminal."""
    return str(args.actor or f"cli:{getpass.getuser()}")


def group(sub: Subparsers, name: str, help_text: str) -> Subparsers:
    """A noun (``mtaplugin NAME ACTION``); returns where its actions go."""
    p = sub.add_parser(name, help=help_text)
    return p.add_subparsers(dest="action", required=True, metavar="ACTION")


def leaf(
    parent: Subparsers, name: str, handler: Handler, help_text: str, *, on: str = ""
) -> argparse.ArgumentParser:
    """One action run by ``handler``; returns its parser for the arguments.  ``on``: what
    the action is on, named first (the argument ``on``, shown as ``ON``)."""
    p = parent.add_parser(name, help=help_text)
    p.set_defaults(handler=handler)
    if on:
        p.add_argument(on, metavar=on.upper())
    return p


def list_leaf(
    parent: Subparsers, name: str, handler: Handler, help_text: str
) -> argparse.ArgumentParser:
    """One action on one list, named first (``LIST``, the address or the list id)."""
    return leaf(parent, name, handler, help_text, on="list")


def add_actor(p: argparse.ArgumentParser) -> None:
    """``--as EMAIL``: the address recorded in the audit log."""
    p.add_argument("--as", dest="actor", metavar="EMAIL", help=_("who acts (audit log)"))


def on_each(
    settings: config.Settings,
    list_name: str,
    items: Sequence[T],
    act: Callable[[Session, MailingList, T], R],
) -> list[R]:
    """``act`` on each of ``items`` (held posts' ids, requests' tokens) of the list
    ``list_name``, in one transaction; the outcomes, in order."""
    from mtaplugin.manage import lists

    with scope(settings) as s:
        mlist = lists.get(s, list_name)
        return [act(s, mlist, item) for item in items]


def decision_leaves(
    parent: Subparsers,
    actions: Sequence[tuple[str, str]],
    handler_for: Callable[[str], Handler],
    items: tuple[str, str, Callable[[str], Any]],
    reason: tuple[set[str], str],
) -> None:
    """One action per decision (``actions``: its name and help), each taking ``LIST``,
    one or more ``items`` (dest, metavar, type), ``--as`` and, for the decisions named in
    ``reason``, ``--reason`` with its help."""
    dest, metavar, kind = items
    with_reason, reason_help = reason
    for action, help_text in actions:
        p = list_leaf(parent, action, handler_for(action), help_text)
        p.add_argument(dest, nargs="+", type=kind, metavar=metavar)
        add_actor(p)
        if action in with_reason:
            p.add_argument("--reason", default="", help=reason_help)
