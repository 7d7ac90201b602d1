"""``mtaplugin members add|remove|list|invite``: the members, owners, moderators and
nonmembers of a list."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, actor, add_actor, group, list_leaf, scope
from mtaplugin.cli.confirm import NOT_CONFIRMED, add_yes, confirmed
from mtaplugin.errors import MtapluginError
from mtaplugin.i18n import _

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtaplugin.model import MailingList


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


def _valid_entries(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The (address, name) of every line given; none, with the problems printed, when a
    line is bad or there are no lines."""
    from mtaplugin.manage import members

    entries, errors = members.validate_lines(_read_lines(args))
    if errors:
        for error in errors:
            print(error, file=sys.stderr)
        print(_("nothing was changed: fix the lines above and try again"), file=sys.stderr)
        return []
    if not entries:
        print(_("no addresses given (arguments, or --file FILE / --file -)"), file=sys.stderr)
    return entries


def _refusal(s: Session, mlist: MailingList, email: str) -> str:
    """Why a mass subscription left ``email`` out: a ban, or the list's own address."""
    from mtaplugin.manage import bans, subscriptions

    if bans.is_banned(s, mlist, email):
        return subscriptions.Banned(email, mlist).problem
    return f"{email}: " + _("a list cannot subscribe its own addresses")


def cmd_members_add(args: argparse.Namespace, settings: config.Settings) -> int:
    from tqdm import tqdm

    from mtaplugin.enums import MemberRole
    from mtaplugin.manage import admin_roster, lists, members, subscriptions

    role = members.parse_role(args.role)
    mode = members.check_delivery_mode(
        members.parse_delivery_mode(args.delivery_mode) if args.delivery_mode else None
    )
    entries = _valid_entries(args)
    if not entries:
        return 1
    # Members join through the workflow as an administrator adds them (see
    # manage.admin_roster); owners, moderators and nonmembers are roster entries.
    workflow = subscriptions.WorkflowSettings.from_settings(settings)
    refused: list[str] = []
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        if len(entries) == 1 and not args.file:
            email, name = entries[0]
            admin_roster.add(
                admin_roster.Administrator(s, mlist, actor(args), workflow),
                email,
                role,
                display_name=name,
                delivery_mode=mode,
                send_welcome_message=args.welcome_msg,
                send_admin_notice=args.admin_notify,
            )
            print(
                _("added {email} as {role} of {list}").format(
                    email=email, role=role.value, list=mlist.fqdn_listname
                )
            )
            return 0
        with tqdm(total=len(entries), unit="member", file=sys.stderr, disable=args.quiet) as bar:

            def progress(count: int) -> None:
                bar.update(count)

            if role is MemberRole.member:
                done = subscriptions.mass_subscribe(
                    s,
                    mlist,
                    entries,
                    delivery_mode=mode,
                    send_welcome_message=args.welcome_msg,
                    send_admin_notice=args.admin_notify,
                    actor=actor(args),
                    settings=workflow,
                    progress=progress,
                )
                added, already = len(done.added), done.already
                refused = [_refusal(s, mlist, email) for email in done.refused]
            else:
                result = members.add_many(s, mlist, entries, role, mode, progress=progress)
                added, already = result.added, result.already
    for problem in refused:
        print(_("not added: {problem}").format(problem=problem), file=sys.stderr)
    print(
        _("added {added}, already there {already}, to {list}").format(
            added=added, already=already, list=args.list
        )
    )
    return 1 if refused else 0


def cmd_members_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import admin_roster, lists, members, subscriptions

    role = members.parse_role(args.role)
    workflow = subscriptions.WorkflowSettings.from_settings(settings)
    entries = _valid_entries(args)
    if not entries:
        return 1
    emails = [email for email, _name in entries]
    with scope(settings) as s:
        name = lists.get(s, args.list).fqdn_listname
    # One address named on the command line is removed as asked; more (a mass removal)
    # are shown first and need --yes or the list's address typed.
    if (len(emails) > 1 or args.file) and not confirmed(
        args,
        [
            _("{email} ({role} of {list})").format(email=e, role=role.value, list=name)
            for e in emails
        ],
        name,
    ):
        return NOT_CONFIRMED
    with scope(settings) as s:
        by = admin_roster.Administrator(s, lists.get(s, args.list), actor(args), workflow)
        for email in emails:
            admin_roster.remove(
                by,
                email,
                role,
                send_goodbye_message=args.goodbye_msg,
                send_admin_notice=args.admin_notify,
            )
    for email in emails:
        print(_("removed {email}").format(email=email))
    return 0


def cmd_members_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.bounces.standing import standings, when
    from mtaplugin.manage import lists, members

    role = members.parse_role(args.role) if args.role else None
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        rows = members.roster(s, mlist, role)
        bounces = standings(s, [m.id for m, _a in rows]) if args.bounces else {}
        for member, address in rows:
            mode = member.delivery_mode.value if member.delivery_mode else "regular"
            name = f" ({member.display_name})" if member.display_name else ""
            columns = [f"{address.email}{name}", member.role.value, mode]
            if args.bounces:
                b = bounces[member.id]
                columns += [
                    str(b.score),
                    when(b.last_bounce),
                    str(b.warnings_sent),
                    b.reason() or b.status.value,
                ]
            print("\t".join(columns))
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


def _notice_flag(p: argparse.ArgumentParser, flag: str, help_text: str) -> None:
    """``--FLAG/--no-FLAG`` for one notice; unset, the list's setting decides. Only
    the member role has notices: owners, moderators and nonmembers are roster entries."""
    p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)


def _admin_notify_flag(p: argparse.ArgumentParser) -> None:
    _notice_flag(
        p,
        "--admin-notify",
        _("tell the list's owners and moderators (default: the list's admin_notify_mchanges)"),
    )


def register(sub: Subparsers) -> None:
    mem = group(sub, "members", _("members, owners, moderators and nonmembers of a list"))
    p = list_leaf(mem, "add", cmd_members_add, _("add members (arguments, or --file)"))
    p.add_argument("emails", nargs="*", metavar="EMAIL")
    p.add_argument("--file", help=_("one address per line ('Name <email>' allowed); - is stdin"))
    p.add_argument("--role", default="member")
    p.add_argument("--delivery-mode")
    p.add_argument("--quiet", action="store_true", help=_("no progress bar"))
    _notice_flag(
        p, "--welcome-msg", _("welcome each new member (default: the list's send_welcome_message)")
    )
    _admin_notify_flag(p)
    add_actor(p)
    p = list_leaf(
        mem,
        "remove",
        cmd_members_remove,
        _("remove members (arguments, or --file); more than one needs --yes or the list typed"),
    )
    p.add_argument("emails", nargs="*", metavar="EMAIL")
    p.add_argument("--file", help=_("one address per line ('Name <email>' allowed); - is stdin"))
    add_yes(p)
    p.add_argument("--role", default="member")
    _notice_flag(
        p,
        "--goodbye-msg",
        _("say goodbye to each member (default: the list's send_goodbye_message)"),
    )
    _admin_notify_flag(p)
    add_actor(p)
    p = list_leaf(mem, "list", cmd_members_list, _("list the roster"))
    p.add_argument("--role")
    p.add_argument(
        "--bounces",
        action="store_true",
        help=_(
            "add the bounce record: bounce score, last bounce, warnings sent, and "
            "delivery (enabled, or why it is off)"
        ),
    )
    p = list_leaf(mem, "invite", cmd_members_invite, _("invite people to join (they confirm)"))
    p.add_argument("emails", nargs="+", metavar="EMAIL")
    add_actor(p)
