"""``mtaplugin import mailman2 LIST CONFIG.PCK``: a Mailman 2.1 list moved in, in one
transaction, safe to run twice; ``--dry-run`` says what it would change."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, leaf
from mtaplugin.i18n import _


class _DryRun(Exception):
    """Raised inside the transaction to roll a dry run back."""


def cmd_import_mailman2(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.db import session_scope
    from mtaplugin.importers import apply, mailman2, mm2pickle
    from mtaplugin.posting.addresses import normalize_email
    from mtaplugin.wiring import build

    listname = normalize_email(args.list, "list")
    configuration = mm2pickle.load(Path(args.pickle))
    plan = mailman2.plan(configuration, listname)
    if args.archive:
        print(
            _(
                "mtaplugin: error: --archive needs the list archive, which is not built "
                "yet; import the members and settings now and the mbox later"
            ),
            file=sys.stderr,
        )
        return 2
    world = build(settings)
    report: apply.Report | None = None
    try:
        with session_scope(world.sessions) as session:
            with tqdm(
                total=len(plan.members),
                unit="member",
                file=sys.stderr,
                disable=args.quiet or not sys.stderr.isatty(),
            ) as bar:

                def advance(n: int) -> None:
                    bar.update(n)

                report = apply.apply(session, plan, merge=args.merge, progress=advance)
            if args.dry_run:
                raise _DryRun
    except _DryRun:
        pass
    assert report is not None
    _print(report, listname, dry_run=args.dry_run)
    return 0


def _print(report: object, listname: str, *, dry_run: bool) -> None:
    from mtaplugin.importers.apply import Report

    assert isinstance(report, Report)
    if dry_run:
        print(_("dry run: nothing was changed; an import would:"))
    if report.created_domain:
        print(_("create the domain of {list}").format(list=listname))
    if report.created_list:
        print(_("create the list {list}").format(list=listname))
    for line in report.changes:
        print(f"  {line}")
    for role, n in sorted(report.added.items(), key=lambda kv: kv[0].value):
        print(_("add {n} {role}(s)").format(n=n, role=role.value))
    if report.updated_members:
        print(_("update {n} member(s)").format(n=report.updated_members))
    if not report.changed:
        print(
            _("{list} already matches this configuration: nothing to change").format(list=listname)
        )
    for note in report.notes:
        print(_("note: {note}").format(note=note))


def register(sub: Subparsers) -> None:
    ip = group(sub, "import", _("move lists in from other list managers"))
    p = leaf(
        ip,
        "mailman2",
        cmd_import_mailman2,
        _("import a Mailman 2.1 list from its config.pck (settings, rosters, texts)"),
    )
    p.add_argument("list", metavar="LIST", help=_("the list to create or update: NAME@DOMAIN"))
    p.add_argument("pickle", metavar="CONFIG.PCK", help=_("the list's config.pck from Mailman 2.1"))
    p.add_argument(
        "--dry-run", action="store_true", help=_("print what would change, change nothing")
    )
    p.add_argument(
        "--merge",
        action="store_true",
        help=_("keep members of an existing list that the configuration does not name"),
    )
    p.add_argument(
        "--archive", metavar="MBOX", help=_("the list's Pipermail mbox (needs the archive)")
    )
    p.add_argument("-q", "--quiet", action="store_true", help=_("no progress bar"))
