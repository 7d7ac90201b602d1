"""``mtaplugin lists create|list|show|get|set|clone|remove``: the mailing lists;
``sync``, ``source``, ``source-set``, ``source-remove``: rosters read from LDAP or SQL
(:mod:`mtaplugin.roster_sources`).

``get`` and ``set`` read and write a list setting under its REST name with the REST API's
own parsers, so a value is checked (and refused, with the same words) as over REST."""

from __future__ import annotations

import argparse
import sys

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, add_actor, group, leaf, list_leaf, scope
from mtaplugin.cli.confirm import add_yes, remove_confirmed
from mtaplugin.i18n import _


def cmd_lists_create(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.enums import MemberRole
    from mtaplugin.manage import lists, members

    with scope(settings) as s:
        mlist = lists.create(
            s, args.fqdn_listname, args.style, args.display_name or "", args.description
        )
        for owner in args.owner or []:
            members.add(s, mlist, owner, MemberRole.owner)
        print(_("created list {name}").format(name=mlist.fqdn_listname))
    return 0


def cmd_lists_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists

    with scope(settings) as s:
        for mlist, count in lists.all_lists(s, args.domain):
            print(f"{mlist.fqdn_listname}\t{count}\t{mlist.display_name}")
    return 0


def cmd_lists_show(args: argparse.Namespace, settings: config.Settings) -> int:
    from sqlalchemy import inspect

    from mtaplugin.manage import lists

    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        for attr in inspect(type(mlist)).column_attrs:
            if attr.key in {"id", "moderator_password"}:
                continue
            value = getattr(mlist, attr.key)
            print(f"{attr.key}: {getattr(value, 'value', value)}")
    return 0


def cmd_lists_get(args: argparse.Namespace, settings: config.Settings) -> int:
    import json

    from mtaplugin.api.resources.config import ATTRIBUTES
    from mtaplugin.manage import lists

    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        names = [args.key] if args.key else ATTRIBUTES.readable
        for name in names:
            if name not in ATTRIBUTES.readable:
                print(
                    _("mtaplugin: error: {key}: no such list setting").format(key=name),
                    file=sys.stderr,
                )
                return 2
            value = ATTRIBUTES.read(mlist, name)
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            print(shown if args.key else f"{name}: {shown}")
    return 0


def cmd_lists_set(args: argparse.Namespace, settings: config.Settings) -> int:
    import falcon

    from mtaplugin.api.resources.config import ATTRIBUTES
    from mtaplugin.manage import lists

    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        try:
            changes = ATTRIBUTES.parse({args.key: list(args.values)}, complete=False)
        except falcon.HTTPError as e:
            print(_("mtaplugin: error: {error}").format(error=e.description), file=sys.stderr)
            return 2
        for key, value in changes.items():
            setattr(mlist, key, value)
    print(_("set {key} of {list}").format(key=args.key, list=args.list))
    return 0


def cmd_lists_clone(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.errors import AlreadyExists, NotFound
    from mtaplugin.importers import apply, document
    from mtaplugin.manage import lists

    with scope(settings) as s:
        source = lists.get(s, args.source)
        try:
            lists.get(s, args.new)
        except NotFound:
            pass
        else:
            raise AlreadyExists(
                "new", _("mailing list exists: {name}").format(name=args.new.lower())
            )
        doc = document.export(s, source, with_members=args.with_members)
        report = apply.apply(s, document.plan_of(doc, args.new))
    added = sum(report.added.values())
    print(
        _("cloned {source} as {new} ({n} memberships)").format(
            source=args.source, new=args.new, n=added
        )
    )
    return 0


def cmd_lists_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists

    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        name = mlist.fqdn_listname
        count = dict((m.id, n) for m, n in lists.all_lists(s, mlist.mail_host))[mlist.id]
    what = [_("the list {list} and its {count} members").format(list=name, count=count)]
    done = _("removed list {name}").format(name=args.list)
    return remove_confirmed(args, settings, what, name, lambda s: lists.remove(s, name), done)


# --- roster sources (mtaplugin.roster_sources) --------------------------------------------
def _role(args: argparse.Namespace) -> object:
    from mtaplugin.manage import members

    return members.parse_role(args.role, "--role") if args.role else None


def cmd_lists_sync(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.cli.common import actor
    from mtaplugin.manage import lists
    from mtaplugin.roster_sources import sources
    from mtaplugin.roster_sources.sync import sync
    from mtaplugin.wiring import build, workflow

    world = build(settings)
    role = _role(args)
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        chosen = [src for src in sources.for_list(s, mlist) if role is None or src.role == role]
        ids = [(src.id, src.role.value) for src in chosen]
    if not ids:
        print(_("{list} has no roster source").format(list=args.list), file=sys.stderr)
        return 1
    status = 0
    for source_id, role_name in ids:
        report = sync(
            world.sessions,
            source_id,
            workflow(settings, world.clock),
            force=args.force,
            dry_run=args.dry_run,
            actor=actor(args),
        )
        head = _("would change") if args.dry_run else _("changed")
        print(f"{report.list_name} ({role_name}): {report.result}: {report.message}")
        if report.result == "ok":
            for email in report.added:
                print(f"  + {email}")
            for email in report.removed:
                print(f"  - {email}")
            for email, why in sorted(report.refused.items()):
                print(f"  ! {email} ({why})")
            print("  " + _("{head}: {added} added, {removed} removed; {same} unchanged, "
                           "{skipped} directory entries without a usable address").format(
                head=head, added=len(report.added), removed=len(report.removed),
                same=report.unchanged, skipped=report.skipped))  # fmt: skip
        else:
            for email in report.removed:
                print(f"  - {email}")
            status = 1
    return status


def cmd_lists_source(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists
    from mtaplugin.roster_sources import sources

    role = _role(args)
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        shown = [src for src in sources.for_list(s, mlist) if role is None or src.role == role]
        if not shown:
            print(_("{list} has no roster source").format(list=args.list), file=sys.stderr)
            return 1
        for src in shown:
            for key, value in sources.view(src).items():
                print(f"{key}: {getattr(value, 'isoformat', lambda v=value: v)()}")
            print()
    return 0


def cmd_lists_source_set(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.errors import InvalidInput
    from mtaplugin.manage import lists, members
    from mtaplugin.roster_sources import sources

    values: dict[str, str] = {}
    for item in args.settings:
        key, sep, value = item.partition("=")
        if not sep:
            raise InvalidInput("KEY=VALUE", _("expected KEY=VALUE, got {item!r}").format(item=item))
        if key == "bind_password":
            raise InvalidInput(
                key, _("give the bind password on standard input (--bind-password-stdin)")
            )
        values[key] = value
    if args.bind_password_stdin:
        values["bind_password"] = sys.stdin.readline().rstrip("\n")
    role = members.parse_role(args.role, "--role")
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        src = sources.save(s, mlist, role, values)
        text = _("roster source for the {role}s of {list}: {kind} {url}")
        print(
            text.format(role=role.value, list=mlist.fqdn_listname, kind=src.kind.value, url=src.url)
        )
    return 0


def cmd_lists_source_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, members
    from mtaplugin.roster_sources import sources

    role = members.parse_role(args.role, "--role")
    with scope(settings) as s:
        sources.remove(s, lists.get(s, args.list), role)
    print(_("removed the roster source; its members stay, as if added by hand"))
    return 0


def register(sub: Subparsers) -> None:
    lst = group(sub, "lists", _("mailing lists"))
    p = leaf(lst, "create", cmd_lists_create, _("create a list"))
    p.add_argument("fqdn_listname", metavar="LIST@DOMAIN")
    p.add_argument(
        "--style",
        default="legacy-default",
        help="legacy-default, legacy-announce or private-default",
    )
    p.add_argument("--display-name")
    p.add_argument("--description", default="")
    p.add_argument("--owner", action="append", metavar="EMAIL")
    p = leaf(lst, "list", cmd_lists_list, _("list lists (address, members, name)"))
    p.add_argument("--domain")
    list_leaf(lst, "show", cmd_lists_show, _("show every setting of a list"))
    p = list_leaf(lst, "get", cmd_lists_get, _("print one setting of a list, or all (REST names)"))
    p.add_argument("key", metavar="KEY", nargs="?")
    p = list_leaf(
        lst,
        "set",
        cmd_lists_set,
        _("change one setting of a list (REST name; several values for a list setting)"),
    )
    p.add_argument("key", metavar="KEY")
    p.add_argument("values", metavar="VALUE", nargs="*")
    p = leaf(
        lst,
        "clone",
        cmd_lists_clone,
        _("a new list with the settings, bans, header matches and templates of another"),
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("new", metavar="NEW@DOMAIN")
    p.add_argument("--with-members", action="store_true", help=_("copy the rosters too"))
    p = list_leaf(lst, "remove", cmd_lists_remove, _("remove a list and its members"))
    add_yes(p)
    p = list_leaf(
        lst,
        "sync",
        cmd_lists_sync,
        _("sync a list's rosters from their LDAP or SQL source now, printing the changes"),
    )
    p.add_argument("--role", help=_("only this role's source (member, owner, moderator)"))
    p.add_argument(
        "--force", action="store_true", help=_("remove more members than the source's bound")
    )
    p.add_argument("--dry-run", action="store_true", help=_("print the changes, make none"))
    add_actor(p)
    p = list_leaf(lst, "source", cmd_lists_source, _("show a list's roster sources and last syncs"))
    p.add_argument("--role")
    p = list_leaf(
        lst,
        "source-set",
        cmd_lists_source_set,
        _("create or change the roster source of a list's role (KEY=VALUE settings)"),
    )
    p.add_argument("settings", metavar="KEY=VALUE", nargs="*")
    p.add_argument("--role", default="member")
    p.add_argument(
        "--bind-password-stdin",
        action="store_true",
        help=_("read the bind password from the first line of standard input"),
    )
    p = list_leaf(
        lst,
        "source-remove",
        cmd_lists_source_remove,
        _("remove a roster source (the members it added stay)"),
    )
    p.add_argument("--role", default="member")
