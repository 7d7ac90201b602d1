"""What every noun of the ``mtaplugin`` command shares: the handler type, a database
session scope, who acts, and the two ways to add a command (a group with actions, or one
action)."""

from __future__ import annotations

import argparse
import getpass
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, TypeAlias

from mtaplugin import config
from mtaplugin.i18n import _

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

Handler = Callable[[argparse.Namespace, config.Settings], int]
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def scope(settings: config.Settings) -> AbstractContextManager[Session]:
    """One transaction on the configured database: committed on success."""
    from mtaplugin.db import make_engine, session_scope, sessionmaker_for

    sessions = sessionmaker_for(make_engine(settings.database.url, settings.database.timeout))
    return session_scope(sessions)


def actor(args: argparse.Namespace) -> str:
    """Who acts, for the audit log: ``--as EMAIL``, or the user at the terminal."""
    return str(args.actor or f"cli:{getpass.getuser()}")


def group(sub: Subparsers, name: str, help_text: str) -> Subparsers:
    """A noun (``mtaplugin NAME ACTION``); returns where its actions go."""
    p = sub.add_parser(name, help=help_text)
    return p.add_subparsers(dest="action", required=True, metavar="ACTION")


def leaf(
    parent: Subparsers, name: str, handler: Handler, help_text: str
) -> argparse.ArgumentParser:
    """One action run by ``handler``; returns its parser for the arguments."""
    p = parent.add_parser(name, help=help_text)
    p.set_defaults(handler=handler)
    return p


def add_actor(p: argparse.ArgumentParser) -> None:
    """``--as EMAIL``: the address recorded in the audit log."""
    p.add_argument("--as", dest="actor", metavar="EMAIL", help=_("who acts (audit log)"))
