"""``mtaplugin lists create|list|show|remove``: the mailing lists."""

from __future__ import annotations

import argparse

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
    p = leaf(lst, "remove", cmd_lists_remove, _("remove a list and its members"))
    p.add_argument("list", metavar="LIST")
    add_yes(p)
