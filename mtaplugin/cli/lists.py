"""``mtaplugin lists create|list|show|get|set|remove``: the mailing lists.

``get`` and ``set`` read and write a list setting under its REST name with the REST API's
own parsers, so a value is checked (and refused, with the same words) as over REST."""

from __future__ import annotations

import argparse
import sys

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, leaf, scope
from mtaplugin.cli.confirm import NOT_CONFIRMED, add_yes, confirmed
from mtaplugin.i18n import _


def cmd_lists_create(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, members
    from mtaplugin.model.enums import MemberRole

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
    if not confirmed(args, what, name):
        return NOT_CONFIRMED
    with scope(settings) as s:
        lists.remove(s, name)
    print(_("removed list {name}").format(name=args.list))
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
    p = leaf(lst, "show", cmd_lists_show, _("show every setting of a list"))
    p.add_argument("list", metavar="LIST")
    p = leaf(lst, "get", cmd_lists_get, _("print one setting of a list, or all (REST names)"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("key", metavar="KEY", nargs="?")
    p = leaf(
        lst,
        "set",
        cmd_lists_set,
        _("change one setting of a list (REST name; several values for a list setting)"),
    )
    p.add_argument("list", metavar="LIST")
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
    p = leaf(lst, "remove", cmd_lists_remove, _("remove a list and its members"))
    p.add_argument("list", metavar="LIST")
    add_yes(p)
