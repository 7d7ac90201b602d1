"""Applying an import's plan (``mtaplugin import mailman2|mailman3|json``): in one
transaction, rolled back whole for ``--dry-run``, and the report printed."""

from __future__ import annotations

import argparse
import sys

from mtaplugin import config
from mtaplugin.i18n import _


class DryRun(Exception):
    """Raised inside the transaction to roll a dry run back."""


def apply_plan(settings: config.Settings, plan: object, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from mtaplugin.db import session_scope
    from mtaplugin.importers import apply
    from mtaplugin.importers.plan import Plan
    from mtaplugin.wiring import build

    assert isinstance(plan, Plan)
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
                raise DryRun
    except DryRun:
        pass
    assert report is not None
    _print(report, plan.fqdn_listname, dry_run=args.dry_run)
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
        if dry_run:
            for email, _role in (e for e in report.added_emails if e[1] is role):
                print(f"    + {email}")
    if report.updated_members:
        print(_("update {n} member(s)").format(n=report.updated_members))
    if report.passwords:
        print(
            _("carry the Mailman 2.1 password of {n} member(s) (hashed)").format(n=report.passwords)
        )
    if not report.changed:
        print(
            _("{list} already matches this configuration: nothing to change").format(list=listname)
        )
    for note in report.notes:
        print(_("note: {note}").format(note=note))
