"""``mtaplugin requests list|accept|reject|discard|defer``: subscription and
unsubscription requests waiting for someone."""

from __future__ import annotations

import argparse

from mtaplugin import config
from mtaplugin.cli import common
from mtaplugin.cli.common import Handler, Subparsers, actor, group, list_leaf, scope
from mtaplugin.i18n import _


def cmd_requests_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, subscriptions

    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        for p in subscriptions.pending_requests(s, mlist):
            expires = p.expires_at.strftime("%Y-%m-%d %H:%M")
            print(f"{p.token}\t{p.request_type.value}\t{p.token_owner.value}\t{p.email}\t{expires}")
    return 0


def _request_action(action: str) -> Handler:
    def handler(args: argparse.Namespace, settings: config.Settings) -> int:
        from mtaplugin.manage import subscriptions

        workflow = subscriptions.WorkflowSettings.from_settings(settings)
        who, reason = actor(args), getattr(args, "reason", "") or ""
        results = common.on_each(
            settings,
            args.list,
            args.tokens,
            lambda s, mlist, token: subscriptions.moderate(
                s, mlist, token, action, actor=who, reason=reason, settings=workflow
            ),
        )
        for token, status in zip(args.tokens, results, strict=True):
            print(f"{token}\t{status.value}")
        return 0

    return handler


def register(sub: Subparsers) -> None:
    rq = group(sub, "requests", _("subscription and unsubscription requests"))
    list_leaf(rq, "list", cmd_requests_list, _("list waiting requests (token, type, owner, email)"))
    common.decision_leaves(
        rq,
        (
            ("accept", _("approve requests waiting for a moderator")),
            ("reject", _("refuse requests (the person is told)")),
            ("discard", _("drop requests silently")),
            ("defer", _("leave requests waiting, recording the decision")),
        ),
        _request_action,
        ("tokens", "TOKEN", str),
        ({"reject"}, _("told to the person")),
    )
