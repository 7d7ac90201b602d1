"""``mtaplugin news gate LIST``: one poll of the list's linked newsgroup now (what the
``news-gate`` job does every few minutes), printing how many articles were gated."""

from __future__ import annotations

import argparse
import sys

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, list_leaf
from mtaplugin.i18n import _


def cmd_news_gate(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin import news, wiring
    from mtaplugin.db import session_scope
    from mtaplugin.frontends.news import poll
    from mtaplugin.manage import lists

    world = wiring.build(settings)
    with session_scope(world.sessions) as s:
        mlist = lists.get(s, args.list)
        s.expunge(mlist)
    if not (mlist.gateway_to_mail and mlist.linked_newsgroup.strip()):
        print(
            _(
                "mtaplugin: error: {list} does not gate news to mail (set gateway_to_mail and "
                "linked_newsgroup)"
            ).format(list=mlist.fqdn_listname),
            file=sys.stderr,
        )
        return 2
    engine = wiring.list_engine(world)
    try:
        result = poll(mlist, lambda: news.connect(settings), engine, world.clock())
    finally:
        engine.close()
    if result.started:
        print(
            _("{group}: first poll; {list} gates the articles posted from now on").format(
                group=result.newsgroup, list=mlist.fqdn_listname
            )
        )
        return 0
    print(
        _("{group}: {gated} articles gated to {list}, {skipped} skipped").format(
            group=result.newsgroup,
            gated=result.gated,
            list=mlist.fqdn_listname,
            skipped=result.skipped,
        )
    )
    if result.stopped:
        print(_("stopped: {why}").format(why=result.stopped), file=sys.stderr)
        return 1
    return 0


def register(sub: Subparsers) -> None:
    np = group(sub, "news", _("the Usenet gateway"))
    list_leaf(np, "gate", cmd_news_gate, _("poll the list's linked newsgroup now"))
