"""``mtaplugin members add|remove|list|invite``: the members, owners, moderators and
nonmembers of a list."""

from __future__ import annotations

import argparse
import sys

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, actor, add_actor, group, leaf, scope
from mtaplugin.errors import MtapluginError
from mtaplugin.i18n import _


def _read_lines(args: argparse.Namespace) -> list[str]:
    """The addresses given as arguments, then those of ``--file`` (``-`` is stdin)."""
    lines: list[str] = list(args.emails)
    if args.file == "-":
        lines.extend(sys.stdin.read().splitlines())
    elif args.file:
        try:
            with open(args.file, encoding="utf-8") as fh:
                lines.extend(fh.read().splitlines())
        except OSError as exc:
            raise MtapluginError(f"--file: {exc.strerror}: {args.file}") from None
    return lines


def cmd_members_add(args: argparse.Namespace, settings: config.Settings) -> int:
    from tqdm import tqdm  # type: ignore[import-untyped]

    from mtaplugin.manage import lists, members

    role = members.parse_role(args.role)
    mode = members.parse_delivery_mode(args.delivery_mode) if args.delivery_mode else None
    entries, errors = members.validate_lines(_read_lines(args))
    if errors:
        for error in errors:
            print(error, file=sys.stderr)
        print(_("nothing was changed: fix the lines above and try again"), file=sys.stderr)
        return 1
    if not entries:
        print(_("no addresses given (arguments, or --file FILE / --file -)"), file=sys.stderr)
        return 1
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        if len(entries) == 1 and not args.file:
            email, name = entries[0]
            members.add(s, mlist, email, role, name, mode)
            print(
                _("added {email} as {role} of {list}").format(
                    email=email, role=role.value, list=mlist.fqdn_listname
                )
            )
            return 0
        with tqdm(total=len(entries), unit="member", file=sys.stderr, disable=args.quiet) as bar:
            result = members.add_many(s, mlist, entries, role, mode, progress=bar.update)
    print(
        _("added {added}, already there {already}, to {list}").format(
            added=result.added, already=result.already, list=args.list
        )
    )
    return 0


def cmd_members_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, members

    role = members.parse_role(args.role)
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        for email in args.emails:
            members.remove(s, mlist, email, role)
    for email in args.emails:
        print(_("removed {email}").format(email=email))
    return 0


def cmd_members_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, members

    role = members.parse_role(args.role) if args.role else None
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        for member, address in members.roster(s, mlist, role):
            mode = member.delivery_mode.value if member.delivery_mode else "regular"
            name = f" ({member.display_name})" if member.display_name else ""
            print(f"{address.email}{name}\t{member.role.value}\t{mode}")
    return 0


def cmd_members_invite(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, subscriptions

    workflow = subscriptions.WorkflowSettings.from_settings(settings)
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        for email in args.emails:
            subscriptions.request_subscription(
                s, mlist, email, invitation=True, actor=actor(args), settings=workflow
            )
    for email in args.emails:
        print(_("invited {email}; they join when they answer").format(email=email))
    return 0


def register(sub: Subparsers) -> None:
    mem = group(sub, "members", _("members, owners, moderators and nonmembers of a list"))
    p = leaf(mem, "add", cmd_members_add, _("add members (arguments, or --file)"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("emails", nargs="*", metavar="EMAIL")
    p.add_argument("--file", help=_("one address per line ('Name <email>' allowed); - is stdin"))
    p.add_argument("--role", default="member")
    p.add_argument("--delivery-mode")
    p.add_argument("--quiet", action="store_true", help=_("no progress bar"))
    p = leaf(mem, "remove", cmd_members_remove, _("remove members"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("emails", nargs="+", metavar="EMAIL")
    p.add_argument("--role", default="member")
    p = leaf(mem, "list", cmd_members_list, _("list the roster"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("--role")
    p = leaf(mem, "invite", cmd_members_invite, _("invite people to join (they confirm)"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("emails", nargs="+", metavar="EMAIL")
    add_actor(p)
