"""``mtaplugin bounces list``: a list's recent bounce events, newest first."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, list_leaf
from mtaplugin.errors import NotFound
from mtaplugin.i18n import _

#: how many events ``bounces list`` shows unless told
DEFAULT_LIMIT = 50

N = TypeVar("N", int, float)


def _number(text: str, kind: Callable[[str], N], not_one: str) -> N:
    """``text`` read by ``kind`` (int, float); ``not_one`` (with ``{value!r}``) as the
    argument's error when it is not such a number."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(not_one.format(value=text)) from None


def _days(text: str) -> float:
    days = _number(text, float, _("expected a number of days, not {value!r}"))
    if not 0 < days <= 36500:
        raise argparse.ArgumentTypeError(_("expected more than 0 days"))
    return days


def _count(text: str) -> int:
    count = _number(text, int, _("expected a whole number, not {value!r}"))
    if count < 1:
        raise argparse.ArgumentTypeError(_("expected 1 or more"))
    return count


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "-"


def cmd_bounces_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.bounces.standing import event_state, recent_events, since_days, when
    from mtaplugin.db import session_scope
    from mtaplugin.manage import lists
    from mtaplugin.wiring import build

    world = build(settings)
    with session_scope(world.sessions) as s:
        try:
            mlist = lists.get(s, args.list)
        except NotFound as exc:
            print(_("mtaplugin bounces list: error: {error}").format(error=exc), file=sys.stderr)
            return 2
        events = recent_events(s, mlist, since_days(world.clock(), args.since), args.limit)
        for event in events:
            print(
                "\t".join(
                    (
                        when(event.at),
                        event.email,
                        event.kind.value,
                        event.status or "-",
                        _one_line(event.diagnostic),
                        event_state(event),
                    )
                )
            )
    if not events:
        print(_("no bounce events for {list}").format(list=mlist.fqdn_listname), file=sys.stderr)
    return 0


def register(sub: Subparsers) -> None:
    bounces = group(sub, "bounces", _("the bounces a list received"))
    p = list_leaf(
        bounces,
        "list",
        cmd_bounces_list,
        _(
            "recent bounce events, newest first: time, address, kind (hard, policy, "
            "delayed), status, diagnostic, processed or pending (and probe)"
        ),
    )
    p.add_argument(
        "--since", type=_days, metavar="DAYS", help=_("only the events of the last DAYS days")
    )
    p.add_argument(
        "--limit",
        type=_count,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=_("at most N events (default {n})").format(n=DEFAULT_LIMIT),
    )
