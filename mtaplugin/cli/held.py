"""``mtaplugin held list|show|approve|reject|discard|defer``: posts held for moderation."""

from __future__ import annotations

import argparse
import sys

from mtaplugin import config
from mtaplugin.cli import common
from mtaplugin.cli.common import Handler, Subparsers, actor, group, list_leaf, scope
from mtaplugin.i18n import _


def cmd_held_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import held, lists

    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        for h in held.all_held(s, mlist):
            rules = ",".join(str(rule) for rule, _text in h.reasons)
            when = h.hold_date.strftime("%Y-%m-%d %H:%M")
            print(f"{h.id}\t{when}\t{h.sender}\t{rules}\t{h.subject}")
    return 0


def cmd_held_show(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import held, lists

    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        h = held.get(s, mlist, args.id)
        if args.raw:
            sys.stdout.buffer.write(h.raw)
            return 0
        print(_("Held post {id} on {list}").format(id=h.id, list=mlist.fqdn_listname))
        print(_("  From:       {v}").format(v=h.sender))
        print(_("  Subject:    {v}").format(v=h.subject))
        print(_("  Message-ID: {v}").format(v=h.message_id))
        print(_("  Held at:    {v}").format(v=h.hold_date.isoformat(timespec="seconds")))
        print(
            _("  Envelope:   from {f} via {c}").format(
                f=h.envelope.get("mail_from", ""), c=h.envelope.get("client_address", "")
            )
        )
        signals = ", ".join(h.sender_signals) or _("not authenticated")
        print(_("  Sender:     {v}").format(v=signals))
        print(_("  Reasons:"))
        for rule, text in h.reasons:
            print(f"    - {text} ({rule})")
    return 0


def _done(action: str, held_id: int, notified: bool) -> str:
    if action == "approve":
        return _("approved {id}: queued for the members").format(id=held_id)
    if action == "reject" and notified:
        return _("rejected {id}; the poster is told").format(id=held_id)
    if action == "reject":
        return _(
            "rejected {id}; the poster is not told (their address was not "
            "authenticated, so a notice could be backscatter)"
        ).format(id=held_id)
    if action == "discard":
        return _("discarded {id}").format(id=held_id)
    return _("{id} stays held").format(id=held_id)


def _held_action(action: str) -> Handler:
    def handler(args: argparse.Namespace, settings: config.Settings) -> int:
        from mtaplugin.manage import held

        who, reason = actor(args), getattr(args, "reason", "") or ""
        results = common.on_each(
            settings,
            args.list,
            args.ids,
            lambda s, mlist, i: held.act(
                held.Moderator(s, mlist, who, archivers=settings.archivers), i, action, reason
            ),
        )
        for r in results:
            print(_done(action, r.held_id, r.notified))
        return 0

    return handler


def register(sub: Subparsers) -> None:
    hp = group(sub, "held", _("posts held for moderation"))
    list_leaf(hp, "list", cmd_held_list, _("list held posts (id, date, sender, rules, subject)"))
    p = list_leaf(hp, "show", cmd_held_show, _("show one held post"))
    p.add_argument("id", type=int, metavar="ID")
    p.add_argument("--raw", action="store_true", help=_("print the post as it came in"))
    common.decision_leaves(
        hp,
        (
            ("approve", _("send held posts to the members")),
            ("reject", _("refuse held posts (the poster is told if authenticated)")),
            ("discard", _("drop held posts")),
            ("defer", _("leave held posts held, recording the decision")),
        ),
        _held_action,
        ("ids", "ID", int),
        ({"reject", "defer"}, _("told to the poster / recorded")),
    )
