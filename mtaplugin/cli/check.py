"""``mtaplugin check``: read the settings, then check the database, the sockets, Postfix's
wiring, the re-injection listener and DNS; print each finding with what to do.  Exit 0
when nothing is an error, 1 otherwise."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mtaplugin import config
from mtaplugin.cli.common import Subparsers
from mtaplugin.i18n import _


def _label(level: int) -> str:
    from mtaplugin.check import Level

    return {Level.ok: _("ok"), Level.warning: _("warning"), Level.error: _("error")}[Level(level)]


def cmd_check(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.check import Level, Options, run, worst
    from mtaplugin.config.postconf import config_dir

    options = Options(
        postfix_dir=config_dir(args.postfix),
        mta_user=args.mta_user,
        exim_config=Path(args.exim) if args.exim else None,
    )
    findings = run(settings, options)
    if args.json:
        print(json.dumps([f.as_json() for f in findings], indent=2, ensure_ascii=False))
    else:
        width = max(len(_label(level)) for level in Level)
        for f in findings:
            print(f"[{_label(f.level):<{width}}] {f.check}: {f.found}")
            if f.fix:
                print(" " * (width + 3) + _("what to do: {fix}").format(fix=f.fix))
        errors = sum(f.level == Level.error for f in findings)
        warnings = sum(f.level == Level.warning for f in findings)
        if errors or warnings:
            print(
                _("{errors} errors, {warnings} warnings").format(errors=errors, warnings=warnings)
            )
        else:
            print(_("everything checked is fine"))
    return 1 if worst(findings) == Level.error else 0


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "check",
        help=_("check the installation: database, sockets, Postfix, DNS; say what to fix"),
        description=_(
            "Exit status: 0 when no finding is an error, 1 otherwise.  Nothing is changed."
        ),
    )
    p.add_argument(
        "--postfix",
        metavar="DIR",
        type=str,
        help=_("Postfix's configuration directory (default: $MAIL_CONFIG, else /etc/postfix)"),
    )
    p.add_argument(
        "--exim",
        metavar="FILE",
        type=str,
        help=_("Exim's configuration file: check how contrib/exim is wired into it"),
    )
    p.add_argument(
        "--mta-user",
        metavar="USER",
        help=_("the user the MTA connects as (default: Postfix's mail_owner, else postfix)"),
    )
    p.add_argument("--json", action="store_true", help=_("print the findings as JSON"))
    p.set_defaults(handler=cmd_check)
