"""``mtaplugin people``: one person across the site.

``export`` and ``forget`` (the GDPR's access and erasure) and, for owners of many lists,
``find``, ``remove``, ``ban`` and ``moderate`` of one address on every list at once.  The
command line acts as the site admin: every list."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from mtaplugin import config
from mtaplugin.cli.common import Handler, Subparsers, actor, add_actor, group, leaf, scope
from mtaplugin.cli.confirm import add_yes
from mtaplugin.i18n import _

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtaplugin.manage.people.across import Outcome, Target
    from mtaplugin.manage.subscriptions import WorkflowSettings


def _workflow(settings: config.Settings) -> WorkflowSettings:
    from mtaplugin.manage.subscriptions import WorkflowSettings

    return WorkflowSettings.from_settings(settings)


def cmd_export(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage.people import export

    with scope(settings) as s:
        doc = export.build(s, args.email, _workflow(settings).now())
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if args.output and args.output != "-":
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(_("wrote the data of {email} to {path}").format(email=doc["email"], path=args.output))
    else:
        sys.stdout.write(text)
    return 0


def cmd_forget(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage.people import forget
    from mtaplugin.web.keys import site_secret

    choice = forget.parse_archive(args.archive)
    with scope(settings) as s:
        plan = forget.plan(s, args.email)
        lines = plan.lines(choice)
    print(_("Forgetting {email} removes or changes:").format(email=plan.person.email))
    for line in lines:
        print(f"  {line}")
    if not args.yes:
        print(_("nothing was changed: give --yes to do it"))
        return 0
    with scope(settings) as s:
        done = forget.forget(
            s,
            args.email,
            secret=site_secret(settings),
            actor=actor(args),
            archive=choice,
            send_goodbye_message=bool(args.goodbye_msg),
            settings=_workflow(settings),
        )
    print(
        _("forgot {email}: {n} memberships, {h} held posts, {p} pending requests").format(
            email=done.person.email,
            n=len(done.memberships),
            h=len(done.held_posts),
            p=done.pending_requests,
        )
    )
    return 0


def _lists_arg(args: argparse.Namespace) -> list[str] | None:
    names = [n for part in args.lists or [] for n in part.split(",") if n.strip()]
    return names or None


def cmd_find(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage.people import across

    with scope(settings) as s:
        found = across.find(s, across.SITE_ADMIN, args.email)
        rows = [
            (
                f.mlist.fqdn_listname,
                ", ".join(sorted(r.value for r in f.roles)) or "-",
                f.moderation_action.value if f.moderation_action else "default",
                _("banned") if f.banned else "",
            )
            for f in found
        ]
    if not rows:
        print(_("{email} is on no list").format(email=args.email))
        return 1
    for name, roles, action, banned in rows:
        print(f"{name}\t{roles}\t{action}\t{banned}".rstrip())
    return 0


def _report(outcomes: Sequence[Outcome], done_text: str) -> int:
    for o in outcomes:
        if o.changed:
            print(f"{o.list}\t{done_text}")
        else:
            print(f"{o.list}\t{o.note}")
    if not outcomes:
        print(_("no list to change"))
        return 1
    return 0


def _across_lists(
    args: argparse.Namespace,
    settings: config.Settings,
    act: Callable[[Session, Target], Sequence[Outcome]],
    done_text: str,
) -> int:
    """``act`` (``remove``, ``ban`` or ``moderate`` of
    :mod:`~mtaplugin.manage.people.across`, its own options bound) on ``EMAIL`` on the
    lists of ``--lists`` (default: every list), as the site admin; prints what it did on
    each list."""
    from mtaplugin.manage.people import across

    target = across.Target(
        across.SITE_ADMIN, args.email, actor(args), _lists_arg(args), _workflow(settings)
    )
    with scope(settings) as s:
        outcomes = act(s, target)
    return _report(outcomes, done_text)


def cmd_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage.people import across

    remove = partial(
        across.remove,
        send_goodbye_message=args.goodbye_msg,
        send_admin_notice=args.admin_notify,
    )
    return _across_lists(args, settings, remove, _("removed"))


def cmd_ban(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage.people import across

    return _across_lists(args, settings, across.ban, _("banned"))


def cmd_moderate(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage.people import across

    moderate = partial(across.moderate, action=across.parse_moderation(args.action))
    return _across_lists(args, settings, moderate, args.action.strip().lower())


def _lists_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lists",
        action="append",
        metavar="LIST[,LIST...]",
        help=_("only these lists (default: every list)"),
    )


def _person_leaf(
    people: Subparsers, name: str, handler: Handler, help_text: str
) -> argparse.ArgumentParser:
    """One action on one person, named first (``EMAIL``, an address)."""
    return leaf(people, name, handler, help_text, on="email")


def register(sub: Subparsers) -> None:
    people = group(sub, "people", _("one person across the site: export, forget, find"))
    p = _person_leaf(
        people, "export", cmd_export, _("everything the site holds about a person, as JSON")
    )
    p.add_argument("-o", "--output", help=_("write to this file (default: standard output)"))
    p = _person_leaf(
        people, "forget", cmd_forget, _("forget a person: shows what goes; acts only with --yes")
    )
    p.add_argument(
        "--archive",
        default="keep",
        help=_("their archived posts: keep (default), remove or anonymise"),
    )
    p.add_argument(
        "--goodbye-msg",
        action="store_true",
        help=_("say goodbye to them from each list (default: no goodbye)"),
    )
    add_yes(p)
    add_actor(p)
    _person_leaf(people, "find", cmd_find, _("the lists where an address is on a roster or banned"))
    p = _person_leaf(people, "remove", cmd_remove, _("remove a member from every list at once"))
    _lists_option(p)
    p.add_argument(
        "--goodbye-msg",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=_("say goodbye (default: each list's send_goodbye_message)"),
    )
    p.add_argument(
        "--admin-notify",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=_("tell each list's owners (default: the list's admin_notify_mchanges)"),
    )
    add_actor(p)
    p = _person_leaf(people, "ban", cmd_ban, _("ban an address from every list at once"))
    _lists_option(p)
    add_actor(p)
    p = _person_leaf(
        people,
        "moderate",
        cmd_moderate,
        _("set an address's moderation action on every list at once"),
    )
    p.add_argument(
        "action", metavar="ACTION", help=_("default, accept, hold, reject, discard, defer")
    )
    _lists_option(p)
    add_actor(p)
