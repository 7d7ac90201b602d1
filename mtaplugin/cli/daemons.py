"""The long-running processes (``serve``, ``milter``, ``lookup``, ``lmtp``, ``exim``,
``api``, ``worker``) and ``inject``, the one-shot pipe of Exim's transport."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import cast

from mtaplugin import config
from mtaplugin.cli.common import Handler, Subparsers
from mtaplugin.i18n import _

Runner = Callable[[config.Settings], int | None]

#: The commands that run until stopped: they log at INFO by default.
DAEMONS = frozenset({"serve", "milter", "lookup", "lmtp", "exim", "api", "worker"})


def _exit(signum: int, frame: FrameType | None) -> None:
    sys.exit(0)


def daemon(module: str, function: str, *, exit_on_sigterm: bool = False) -> Handler:
    """A handler that imports ``module.function`` only when run and calls it with the
    settings. ``exit_on_sigterm`` is for servers that loop in the main thread without a
    handler of their own: SIGTERM then unwinds them (closing their sockets) and exits 0."""

    def handler(args: argparse.Namespace, settings: config.Settings) -> int:
        run = cast(Runner, getattr(importlib.import_module(module), function))
        if exit_on_sigterm:
            signal.signal(signal.SIGTERM, _exit)
        return run(settings) or 0

    return handler


def cmd_worker(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.worker import run

    run(settings, once=args.once)
    return 0


def cmd_inject(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.frontends.pipe import main as inject

    return inject(settings, args.recipient, args.sender)


def register(sub: Subparsers) -> None:
    for name, handler, help_text in (
        (
            "serve",
            daemon("mtaplugin.supervisor", "run"),
            _("run the milter, the API and the worker under one supervisor"),
        ),
        ("milter", daemon("mtaplugin.frontends.milter.daemon", "run"), _("run the milter")),
        (
            "lookup",
            daemon("mtaplugin.frontends.socketmap", "serve", exit_on_sigterm=True),
            _("answer Postfix's socketmap lookups (relay_domains)"),
        ),
        (
            "lmtp",
            daemon("mtaplugin.frontends.lmtp", "serve"),
            _("run the LMTP front end (Exim's lmtp transport)"),
        ),
        (
            "exim",
            daemon("mtaplugin.frontends.exim", "serve", exit_on_sigterm=True),
            _("answer the queries of Exim's ACLs (contrib/exim)"),
        ),
        ("api", daemon("mtaplugin.api.server", "run"), _("run the REST API under gunicorn")),
    ):
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(handler=handler)
    p = sub.add_parser(
        "inject",
        help=_("decide one post on stdin for one list address (Exim's pipe transport)"),
        description=_(
            "Exit status (sysexits): 0 accepted, held or discarded; 65 unusable post; "
            "67 no such list; 77 refused by a rule; 75 try again later.  The reason is "
            "printed on stderr."
        ),
    )
    p.add_argument(
        "recipient", metavar="RECIPIENT", nargs="?", help=_("list address (default: $RECIPIENT)")
    )
    p.add_argument("-f", dest="sender", help=_("envelope sender (default: $SENDER)"))
    p.set_defaults(handler=cmd_inject)
    p = sub.add_parser("worker", help=_("run the outbox and housekeeping worker"))
    p.add_argument("--once", action="store_true", help=_("one pass, then exit"))
    p.set_defaults(handler=cmd_worker)
