"""``mtaplugin backup FILE`` / ``mtaplugin restore FILE``: the list database (SQLite;
for PostgreSQL the pg_dump / pg_restore to run)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtaplugin import config
from mtaplugin.cli.common import Subparsers
from mtaplugin.cli.confirm import NOT_CONFIRMED, add_yes, confirmed
from mtaplugin.i18n import _


def cmd_backup(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.backup import backup

    done = backup(settings, Path(args.file))
    print(
        _("backed up {size} bytes (schema {revision}) to {path}").format(
            size=done.size, revision=done.revision, path=done.path
        )
    )
    return 0


def cmd_restore(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.backup import BEFORE_RESTORE, database_file, restore

    db_file = database_file(settings)
    if db_file is not None:
        what = [
            _("the database {path}, replaced by {file} (the current one is kept as {kept})").format(
                path=db_file, file=args.file, kept=db_file.name + BEFORE_RESTORE
            )
        ]
        if not confirmed(args, what, db_file.name):
            return NOT_CONFIRMED
    done = restore(settings, Path(args.file))
    print(
        _("restored {path} (schema {revision}); run `mtaplugin db upgrade` before starting").format(
            path=done.path, revision=done.revision
        )
    )
    return 0


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "backup",
        help=_("copy the SQLite database while it runs (PostgreSQL: prints the pg_dump to run)"),
    )
    p.add_argument("file", metavar="FILE")
    p.set_defaults(handler=cmd_backup)
    p = sub.add_parser(
        "restore",
        help=_("put a backup in place of the SQLite database (mtaplugin stopped)"),
    )
    p.add_argument("file", metavar="FILE")
    add_yes(p)
    p.set_defaults(handler=cmd_restore)
