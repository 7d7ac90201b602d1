"""``mtaplugin import mailman3``: a running Mailman 3 site over its REST API (domains,
users, lists), its web accounts (``--web-db``) and its held posts (``--move-held``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mtaplugin import config
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _


def cmd_import_mailman3(args: argparse.Namespace, settings: config.Settings) -> int:
    """A running Mailman 3 site over its REST API: domains, users, then list by list, each
    list read whole and written in one transaction (a rerun completes a broken run)."""
    from tqdm import tqdm

    from mtaplugin.cli.import_apply import DryRun, apply_plan
    from mtaplugin.db import session_scope
    from mtaplugin.importers import mailman3, mm3site, mm3users
    from mtaplugin.importers.mm3rest import Mailman3
    from mtaplugin.vocabulary.addresses import normalize_email
    from mtaplugin.wiring import build

    password = args.password
    if password is None:
        password = os.environ.get("MAILMAN_REST_PASSWORD")
    if not password:
        raise InvalidInput(
            "password", _("give --password or set MAILMAN_REST_PASSWORD (Mailman's admin_pass)")
        )
    if args.archive and "://" not in (args.web_db or ""):
        raise InvalidInput(
            "archive", _("--archive reads HyperKitty's archive from --web-db given as a URL")
        )
    source = Mailman3(args.url, args.user, password, timeout=args.timeout)
    site = source.site()
    names = source.lists()
    if args.lists:
        wanted = [normalize_email(n, "lists") for n in args.lists]
        unknown = sorted(set(wanted) - {n.lower() for n in names})
        if unknown:
            raise InvalidInput(
                "lists",
                _("Mailman has no list {names} (it has: {known})").format(
                    names=", ".join(unknown), known=", ".join(names) or "-"
                ),
            )
        names = [n for n in names if n.lower() in wanted]
    hosts = None if not args.lists else {n.split("@", 1)[1].lower() for n in names}
    print(
        _("{version} at {url}: {n} list(s) to import").format(
            version=site.version, url=source.url, n=len(names)
        )
    )
    if args.dry_run:
        print(_("dry run: nothing is changed; the import would do this"))
    world = build(settings)
    quiet = args.quiet or not sys.stderr.isatty()
    notes: list[str] = []
    with tqdm(desc=_("users"), unit="user", file=sys.stderr, disable=quiet) as bar:
        people = source.users(progress=bar.update)
    changed_users = 0
    for start in range(0, len(people), 100):
        try:
            with session_scope(world.sessions) as session:
                for person in people[start : start + 100]:
                    changed_users += mm3users.apply_user(session, person, notes)
                if args.dry_run:
                    raise DryRun
        except DryRun:
            pass
    print(_("users: {n} of {total} created or updated").format(n=changed_users, total=len(people)))
    loose = source.loose_addresses()
    changed_addresses = 0
    try:
        with session_scope(world.sessions) as session:
            for resource, prefs in loose:
                changed_addresses += mm3users.apply_address(session, resource, prefs, notes)
            if args.dry_run:
                raise DryRun
    except DryRun:
        pass
    if loose:
        print(
            _("addresses of no user: {n} of {total} created or updated").format(
                n=changed_addresses, total=len(loose)
            )
        )
    if args.web_db:
        _web_accounts(world, args, notes)
    for note in notes:
        print(_("note: {note}").format(note=note))
    # after the users: domain owners are users, and keep Mailman's user ids
    try:
        with session_scope(world.sessions) as session:
            for line in mm3site.apply_site(session, site, hosts):
                print(f"  {line}")
            if args.dry_run:
                raise DryRun
    except DryRun:
        pass
    for name in names:
        with tqdm(desc=name, unit="member", file=sys.stderr, disable=quiet) as bar:
            data = source.the_list(name, progress=bar.update)
        apply_plan(settings, mailman3.plan(data, move_held=args.move_held), args)
        if args.move_held:
            _move_held(source, data, dry_run=args.dry_run)
        if args.archive:
            _archive(settings, name, args.web_db, dry_run=args.dry_run)
    return 0


def _archive(settings: config.Settings, name: str, web_db: str, *, dry_run: bool) -> None:
    """The list's HyperKitty archive, from the suite's web database (the same Django
    database holds HyperKitty's tables); a list HyperKitty never archived is a note."""
    from mtaplugin.cli.archive import import_archive

    if dry_run:
        print(_("{list}: its HyperKitty archive would be imported").format(list=name))
        return
    try:
        import_archive(settings, name, "", pipermail=False, hyperkitty=web_db)
    except InvalidInput as exc:
        print(_("note: {note}").format(note=exc.problem))


def _move_held(source: Any, data: Any, *, dry_run: bool) -> None:
    """``--move-held``: once the list's import is committed, its held posts (now held
    here) are discarded in Mailman, so none can be released on both sides."""
    from mtaplugin.importers.mm3rest import MailmanUnavailable

    for held in data.held:
        request_id = held.get("request_id")
        what = _("held post {id} from {sender}: {subject}").format(
            id=request_id, sender=held.get("sender", ""), subject=held.get("subject", "")
        )
        if dry_run:
            print(_("would discard in Mailman (moved here): {what}").format(what=what))
            continue
        try:
            source.discard_held(data.list_id, int(request_id))
        except (MailmanUnavailable, TypeError, ValueError) as e:
            print(
                _(
                    "note: {what} could not be discarded in Mailman ({error}); it is held "
                    "here too: if Mailman released it meanwhile, discard it here"
                ).format(what=what, error=e)
            )
            continue
        print(_("moved: {what} (discarded in Mailman)").format(what=what))


def _web_accounts(world: Any, args: argparse.Namespace, notes: list[str]) -> None:
    """The suite's Django accounts (Postorius's passwords), after the core's users."""
    from mtaplugin.cli.import_apply import DryRun
    from mtaplugin.db import session_scope
    from mtaplugin.importers import django_web, password_notice

    accounts = django_web.read(args.web_db)
    settings = world.settings
    owner = settings.site.site_owner
    base = settings.web.base_url.rstrip("/")
    changed = 0
    try:
        with session_scope(world.sessions) as session:

            def notify(email: str) -> bool:
                if not owner:
                    return False
                reset = f"{base}/reset" if base else ""
                return password_notice.send_once(session, email, owner, reset)

            for account in accounts:
                changed += django_web.apply_account(session, account, notes, notify)
            if args.dry_run:
                raise DryRun
    except DryRun:
        pass
    print(
        _("web accounts: {n} of {total} created or updated").format(n=changed, total=len(accounts))
    )
