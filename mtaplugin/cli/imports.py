"""``mtaplugin import mailman2 LIST CONFIG.PCK``: a Mailman 2.1 list moved in (``--site
DIR``: every list of a 2.1 site, with its archive);
``mtaplugin import json FILE``: lists from ``mtaplugin export`` documents;
``mtaplugin export [LIST...]``: lists as JSON documents.  An import runs in one
transaction, is safe to run twice, and ``--dry-run`` says what it would change."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, leaf
from mtaplugin.cli.import_apply import apply_plan
from mtaplugin.cli.import_mailman3 import cmd_import_mailman3
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _


def cmd_import_mailman2(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.importers import mailman2, mm2pickle
    from mtaplugin.vocabulary.addresses import normalize_email

    if args.site:
        if args.list or args.pickle or args.archive:
            raise InvalidInput(
                "site",
                _("--site imports every list of the site: give no LIST, CONFIG.PCK or "
                  "--archive with it"),
            )  # fmt: skip
        return _import_site(settings, Path(args.site), args)
    if not (args.list and args.pickle):
        raise InvalidInput("list", _("give LIST and CONFIG.PCK, or --site DIR"))
    listname = normalize_email(args.list, "list")
    configuration = mm2pickle.load(Path(args.pickle))
    plan = mailman2.plan(configuration, listname)
    if args.archive and not os.access(args.archive, os.R_OK):
        raise InvalidInput("archive", _("cannot read {path}").format(path=args.archive))
    code = apply_plan(settings, plan, args)
    if code or not args.archive:
        return code
    if args.dry_run:
        print(_("and import the archive from {path}").format(path=args.archive))
        return 0
    return _import_archive(settings, plan.fqdn_listname, args.archive)


def _import_site(settings: config.Settings, root: Path, args: argparse.Namespace) -> int:
    """Every list of the 2.1 site at ``root``, each with its Pipermail mbox: all the
    configurations are read (and refused, if one is not readable) before anything is
    written; then list by list, each in one transaction, its archive after it."""
    from mtaplugin.importers import mailman2, mm2pickle, mm2site

    entries, notes = mm2site.site_lists(root)
    planned = []
    for entry in entries:
        configuration = mm2pickle.load(entry.pickle)
        planned.append((mailman2.plan(configuration, mm2site.address_of(entry, configuration)),
                        entry.archive))  # fmt: skip
    print(_("Mailman 2.1 site at {path}: {n} list(s) to import").format(path=root, n=len(planned)))
    for note in notes:
        print(_("note: {note}").format(note=note))
    for plan, archive in planned:
        apply_plan(settings, plan, args)
        if archive is None:
            continue
        if args.dry_run:
            print(_("and import the archive from {path}").format(path=archive))
            continue
        code = _import_archive(settings, plan.fqdn_listname, str(archive))
        if code:
            return code
    return 0


def _import_archive(settings: config.Settings, listname: str, path: str) -> int:
    """The list's Pipermail mbox into its archive, with its article numbers."""
    from mtaplugin.cli.archive import import_archive

    return import_archive(settings, listname, path, pipermail=True)


def cmd_import_json(args: argparse.Namespace, settings: config.Settings) -> int:
    import json

    from mtaplugin.errors import InvalidInput
    from mtaplugin.importers import document

    try:
        loaded = json.loads(Path(args.file).read_text(encoding="utf-8"))
    except OSError as e:
        raise InvalidInput(
            "file", _("cannot read {path}: {error}").format(path=args.file, error=e.strerror)
        ) from None
    except ValueError as e:
        raise InvalidInput(
            "file", _("{path}: not JSON: {error}").format(path=args.file, error=e)
        ) from None
    documents = loaded if isinstance(loaded, list) else [loaded]
    if args.list and len(documents) != 1:
        raise InvalidInput("list", _("--list needs a file with exactly one list"))
    plans = [document.plan_of(d, args.list) for d in documents]
    for plan in plans:
        code = apply_plan(settings, plan, args)
        if code:
            return code
    return 0


def cmd_export(args: argparse.Namespace, settings: config.Settings) -> int:
    import json

    from mtaplugin.cli.common import scope
    from mtaplugin.importers import document
    from mtaplugin.manage import lists

    with scope(settings) as s:
        chosen = (
            [lists.get(s, name) for name in args.lists]
            if args.lists
            else [m for m, _count in lists.all_lists(s)]
        )
        documents = [document.export(s, m, with_members=not args.no_members) for m in chosen]
    if args.dir:
        out = Path(args.dir)
        out.mkdir(parents=True, exist_ok=True)
        for d in documents:
            path = out / f"{d['list']}.json"
            path.write_text(json.dumps(d, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            print(_("wrote {path}").format(path=path), file=sys.stderr)
        return 0
    body = documents[0] if len(documents) == 1 and args.lists else documents
    print(json.dumps(body, indent=2, ensure_ascii=False))
    return 0


def _dry_run_and_merge(p: argparse.ArgumentParser, merge_help: str) -> None:
    """``--dry-run`` and ``--merge`` (``merge_help``: which members it keeps)."""
    p.add_argument(
        "--dry-run", action="store_true", help=_("print what would change, change nothing")
    )
    p.add_argument("--merge", action="store_true", help=merge_help)


def register(sub: Subparsers) -> None:
    ip = group(sub, "import", _("move lists in from other list managers"))
    p = leaf(
        ip,
        "mailman2",
        cmd_import_mailman2,
        _("import a Mailman 2.1 list from its config.pck (settings, rosters, texts)"),
    )
    p.add_argument(
        "list", metavar="LIST", nargs="?", help=_("the list to create or update: NAME@DOMAIN")
    )
    p.add_argument(
        "pickle", metavar="CONFIG.PCK", nargs="?", help=_("the list's config.pck from Mailman 2.1")
    )
    p.add_argument(
        "--site",
        metavar="DIR",
        help=_(
            "instead of LIST and CONFIG.PCK: Mailman 2.1's var directory (/var/lib/mailman): "
            "every list under lists/, named LIST@host_name, with its Pipermail mbox from "
            "archives/private/"
        ),
    )
    _dry_run_and_merge(
        p, _("keep members of an existing list that the configuration does not name")
    )
    p.add_argument(
        "--archive", metavar="MBOX", help=_("the list's Pipermail mbox, into its archive")
    )
    p.add_argument("-q", "--quiet", action="store_true", help=_("no progress bar"))
    p = leaf(
        ip,
        "mailman3",
        cmd_import_mailman3,
        _("import a running Mailman 3 site over its REST API (domains, users, lists)"),
    )
    p.add_argument("--url", required=True, help=_("Mailman's REST API, e.g. http://localhost:8001"))
    p.add_argument("--user", default="restadmin", help=_("the REST user (admin_user)"))
    p.add_argument(
        "--password", help=_("the REST password (admin_pass); default: $MAILMAN_REST_PASSWORD")
    )
    p.add_argument("--lists", nargs="+", metavar="LIST", help=_("only these lists (NAME@DOMAIN)"))
    p.add_argument(
        "--timeout", type=float, default=30.0, help=_("seconds to wait for each answer of Mailman")
    )
    _dry_run_and_merge(p, _("keep members of an existing list that Mailman's roster does not name"))
    p.add_argument(
        "--move-held",
        action="store_true",
        help=_(
            "take the held posts over: once a list is imported, discard its held posts "
            "in Mailman (the one change the import makes there)"
        ),
    )
    p.add_argument(
        "--web-db",
        metavar="URL|FILE",
        help=_(
            "the suite's web database (Postorius, HyperKitty) as a database URL, or a "
            "dumpdata file: web accounts move with their passwords"
        ),
    )
    p.add_argument(
        "--archive",
        action="store_true",
        help=_(
            "also move each list's HyperKitty archive, read from --web-db (a URL): "
            "Message-IDs, dates, threads and attachments kept"
        ),
    )
    p.add_argument("-q", "--quiet", action="store_true", help=_("no progress bar"))
    p = leaf(ip, "json", cmd_import_json, _("import lists from mtaplugin export documents (JSON)"))
    p.add_argument("file", metavar="FILE", help=_("a document, or a JSON array of them"))
    p.add_argument("--list", metavar="LIST", help=_("import the one list under this name"))
    _dry_run_and_merge(p, _("keep members of an existing list that the document does not name"))
    p.add_argument("-q", "--quiet", action="store_true", help=_("no progress bar"))
    p = leaf(sub, "export", cmd_export, _("print lists as JSON documents (all lists by default)"))
    p.add_argument("lists", metavar="LIST", nargs="*")
    p.add_argument("--dir", metavar="DIR", help=_("write one file per list into DIR"))
    p.add_argument("--no-members", action="store_true", help=_("settings only, no rosters"))
