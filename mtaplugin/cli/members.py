"""``mtaplugin members add|remove|list|invite``: the members, owners, moderators and
nonmembers of a list."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, actor, add_actor, group, leaf, scope
from mtaplugin.errors import AlreadyExists, InvalidInput, MtapluginError
from mtaplugin.i18n import _

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtaplugin.model import MailingList
    from mtaplugin.model.enums import DeliveryMode


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


@dataclass
class _Tally:
    added: int = 0
    already: int = 0
    #: why each refused address was not added (banned, the list's own address, ...)
    refused: list[str] = field(default_factory=list)


def _subscriber(
    args: argparse.Namespace, settings: config.Settings, mode: DeliveryMode | None
) -> Callable[[Session, MailingList, str, str], None]:
    """Subscribe one address through the workflow, as an administrator: pre-verified,
    pre-confirmed and pre-approved, the notices as the flags (else the list) say."""
    from mtaplugin.manage import subscriptions

    workflow = subscriptions.WorkflowSettings.from_settings(settings)
    who = actor(args)

    def subscribe(s: Session, mlist: MailingList, email: str, name: str) -> None:
        subscriptions.request_subscription(
            s,
            mlist,
            email,
            pre_verified=True,
            pre_confirmed=True,
            pre_approved=True,
            display_name=name,
            delivery_mode=mode,
            send_welcome_message=args.welcome_msg,
            send_admin_notice=args.admin_notify,
            actor=who,
            settings=workflow,
        )

    return subscribe


def _subscribe_each(
    s: Session,
    mlist: MailingList,
    entries: list[tuple[str, str]],
    subscribe: Callable[[Session, MailingList, str, str], None],
    progress: Callable[[int], object],
) -> _Tally:
    """A batch: each address on its own, so that one refusal stops only that address."""
    from mtaplugin.manage import subscriptions

    tally = _Tally()
    for email, name in entries:
        try:
            subscribe(s, mlist, email, name)
            tally.added += 1
        except AlreadyExists as exc:
            if subscriptions.is_member(s, mlist, email):
                tally.already += 1
            else:
                tally.refused.append(exc.problem)
        except InvalidInput as exc:
            tally.refused.append(exc.problem)
        progress(1)
    return tally


def cmd_members_add(args: argparse.Namespace, settings: config.Settings) -> int:
    from tqdm import tqdm

    from mtaplugin.manage import lists, members
    from mtaplugin.model.enums import MemberRole

    role = members.parse_role(args.role)
    mode = members.check_delivery_mode(
        members.parse_delivery_mode(args.delivery_mode) if args.delivery_mode else None
    )
    entries, errors = members.validate_lines(_read_lines(args))
    if errors:
        for error in errors:
            print(error, file=sys.stderr)
        print(_("nothing was changed: fix the lines above and try again"), file=sys.stderr)
        return 1
    if not entries:
        print(_("no addresses given (arguments, or --file FILE / --file -)"), file=sys.stderr)
        return 1
    subscribe = _subscriber(args, settings, mode)
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        if len(entries) == 1 and not args.file:
            email, name = entries[0]
            if role is MemberRole.member:
                subscribe(s, mlist, email, name)
            else:
                members.add(s, mlist, email, role, name, mode)
            print(
                _("added {email} as {role} of {list}").format(
                    email=email, role=role.value, list=mlist.fqdn_listname
                )
            )
            return 0
        with tqdm(total=len(entries), unit="member", file=sys.stderr, disable=args.quiet) as bar:
            if role is MemberRole.member:
                tally = _subscribe_each(s, mlist, entries, subscribe, bar.update)
            else:
                result = members.add_many(s, mlist, entries, role, mode, progress=bar.update)
                tally = _Tally(result.added, result.already)
    for problem in tally.refused:
        print(_("not added: {problem}").format(problem=problem), file=sys.stderr)
    print(
        _("added {added}, already there {already}, to {list}").format(
            added=tally.added, already=tally.already, list=args.list
        )
    )
    return 1 if tally.refused else 0


def cmd_members_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, members, subscriptions
    from mtaplugin.model.enums import MemberRole

    role = members.parse_role(args.role)
    workflow = subscriptions.WorkflowSettings.from_settings(settings)
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        for email in args.emails:
            if role is not MemberRole.member:
                members.remove(s, mlist, email, role)
                continue
            subscriptions.request_unsubscription(
                s,
                mlist,
                email,
                pre_confirmed=True,
                pre_approved=True,
                send_goodbye_message=args.goodbye_msg,
                send_admin_notice=args.admin_notify,
                actor=actor(args),
                settings=workflow,
            )
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


def _notice_flag(p: argparse.ArgumentParser, flag: str, help_text: str) -> None:
    """``--FLAG/--no-FLAG`` for one notice; unset, the list's setting decides. Only
    the member role has notices: owners, moderators and nonmembers are roster entries."""
    p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)


def register(sub: Subparsers) -> None:
    mem = group(sub, "members", _("members, owners, moderators and nonmembers of a list"))
    p = leaf(mem, "add", cmd_members_add, _("add members (arguments, or --file)"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("emails", nargs="*", metavar="EMAIL")
    p.add_argument("--file", help=_("one address per line ('Name <email>' allowed); - is stdin"))
    p.add_argument("--role", default="member")
    p.add_argument("--delivery-mode")
    p.add_argument("--quiet", action="store_true", help=_("no progress bar"))
    _notice_flag(
        p, "--welcome-msg", _("welcome each new member (default: the list's send_welcome_message)")
    )
    _notice_flag(
        p,
        "--admin-notify",
        _("tell the list's owners and moderators (default: the list's admin_notify_mchanges)"),
    )
    add_actor(p)
    p = leaf(mem, "remove", cmd_members_remove, _("remove members"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("emails", nargs="+", metavar="EMAIL")
    p.add_argument("--role", default="member")
    _notice_flag(
        p,
        "--goodbye-msg",
        _("say goodbye to each member (default: the list's send_goodbye_message)"),
    )
    _notice_flag(
        p,
        "--admin-notify",
        _("tell the list's owners and moderators (default: the list's admin_notify_mchanges)"),
    )
    add_actor(p)
    p = leaf(mem, "list", cmd_members_list, _("list the roster"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("--role")
    p = leaf(mem, "invite", cmd_members_invite, _("invite people to join (they confirm)"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("emails", nargs="+", metavar="EMAIL")
    add_actor(p)
