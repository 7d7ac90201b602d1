"""The ``mtaplugin`` command: the parser, put together from one module per noun (each
owns its ``register(subparsers)`` next to its handlers), and :func:`main`."""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import logging
import sys
from collections.abc import Sequence

from mtaplugin import config
from mtaplugin.cli import (
    archive,
    backup,
    bounces,
    check,
    daemons,
    db,
    digests,
    dkim,
    domains,
    held,
    imports,
    jobs,
    lists,
    members,
    news,
    people,
    requests,
    users,
)
from mtaplugin.cli.common import Parser
from mtaplugin.daemon_log import DAEMON_FORMAT
from mtaplugin.errors import MtapluginError
from mtaplugin.i18n import _, set_default_language

#: In the order ``mtaplugin --help`` lists them.
NOUNS = (
    db,
    backup,
    domains,
    dkim,
    lists,
    members,
    bounces,
    digests,
    requests,
    held,
    users,
    people,
    jobs,
    news,
    imports,
    archive,
    daemons,
    check,
)


def build_parser() -> argparse.ArgumentParser:
    # every noun's and action's parser is of the same class (argparse makes sub-parsers of
    # their parent's class): options go anywhere on an action's line
    parser = Parser(
        prog="mtaplugin", description=_("A mailing-list manager that runs inside the MTA.")
    )
    parser.add_argument(
        "--config",
        help=_(
            "TOML settings file (default: $MTAPLUGIN_CONFIG, else /etc/mtaplugin/mtaplugin.toml)"
        ),
    )
    parser.add_argument("-v", "--verbose", action="store_true", help=_("log more"))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for noun in NOUNS:
        noun.register(sub)
    _global_options_everywhere(parser)
    return parser


def _actions(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers of every action under ``parser`` (those without sub-commands)."""
    found: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # aliases: once each
                found.extend(_actions(child) if child._subparsers is not None else [child])
    return found


def _global_options_everywhere(parser: argparse.ArgumentParser) -> None:
    """``--config`` and ``-v`` after the action too (``mtaplugin lists show L -v``): each
    action takes them, unlisted in its help; given there, they win over the ones before
    the command (``SUPPRESS``: not given, the command's own value stays)."""
    for action in _actions(parser):
        action.add_argument("--config", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        action.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            default=argparse.SUPPRESS,
            help=argparse.SUPPRESS,
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    daemon = args.command in daemons.DAEMONS
    if daemon:
        # A fault in a C extension (pymilter's, the database driver's) prints every
        # thread's Python stack to stderr (the daemon's log) before the process dies;
        # a stderr that is no file (a daemon run in-process, as the tests do) has no
        # descriptor to print to, and the daemon runs without it
        with contextlib.suppress(OSError, ValueError, AttributeError):
            faulthandler.enable()
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO if daemon else logging.WARNING,
        format=DAEMON_FORMAT,
    )
    try:
        settings = config.load(config.locate(args.config))
        set_default_language(settings.site.default_language)
        return int(args.handler(args, settings))
    except MtapluginError as exc:
        print(_("mtaplugin: error: {error}").format(error=exc), file=sys.stderr)
        # For the pipe, a bad configuration is a reason to try later, not to bounce.
        return 75 if args.command == "inject" else 1
    except KeyboardInterrupt:
        return 130
