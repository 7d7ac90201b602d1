"""``mtaplugin digests send|status LIST|--all``: the digests waiting, and sending them now
(Mailman's ``mailman digests --send``; the worker's daily job does ``--periodic``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, leaf, scope
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtaplugin.model import MailingList


def _lists(session: Session, args: argparse.Namespace) -> list[MailingList]:
    from sqlalchemy import select

    from mtaplugin.manage import lists
    from mtaplugin.model import MailingList

    if args.all and args.list:
        raise InvalidInput("LIST", _("give a list or --all, not both"))
    if args.all:
        query = select(MailingList).order_by(MailingList.mail_host, MailingList.list_name)
        return list(session.scalars(query))
    if not args.list:
        raise InvalidInput("LIST", _("name a list, or give --all"))
    return [lists.get(session, args.list)]


def cmd_digests_status(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.digests import store
    from mtaplugin.lists import roster

    with scope(settings) as s:
        for mlist in _lists(s, args):
            waiting = store.pending(s, mlist.id)
            if args.all and waiting.posts == 0:
                continue
            readers = roster.digest_recipients(s, mlist.id)
            print(
                _(
                    "{list}: vol {volume}, next issue {number}; {posts} posts waiting "
                    "({kib} KiB of {threshold} KiB); {readers} digest members; "
                    "periodic: {periodic}"
                ).format(
                    list=mlist.fqdn_listname,
                    volume=mlist.volume,
                    number=mlist.next_digest_number,
                    posts=waiting.posts,
                    kib=round(waiting.size / 1024, 1),
                    threshold=mlist.digest_size_threshold,
                    readers=len(readers),
                    periodic=_("yes") if mlist.digest_send_periodic else _("no"),
                )
            )
    return 0


def cmd_digests_send(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin import wiring
    from mtaplugin.db import session_scope
    from mtaplugin.digests import send, store

    world = wiring.build(settings)
    with session_scope(world.sessions) as s:
        names = [m.id for m in _lists(s, args) if not args.all or store.pending(s, m.id).posts]
    for pk in names:
        # One transaction per list: a list's digest and the removal of its posts commit
        # together, whatever happens to the others.
        with session_scope(world.sessions) as s:
            from mtaplugin.model import MailingList

            mlist = s.get(MailingList, pk)
            if mlist is None:
                continue
            done = send.send(s, mlist, world.clock(), secret_key=settings.site.secret_key)
            if done.issue is None:
                print(f"{mlist.fqdn_listname}: {done.note}")
                continue
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(done.kinds.items()))
            print(
                _(
                    "{list}: sent vol {volume}, issue {number}: {posts} posts to "
                    "{readers} digest members ({kinds})"
                ).format(
                    list=mlist.fqdn_listname,
                    volume=done.issue.volume,
                    number=done.issue.number,
                    posts=done.posts,
                    readers=done.recipients,
                    kinds=kinds,
                )
            )
    if args.all and not names:
        print(_("no list has posts waiting for a digest"))
    return 0


def register(sub: Subparsers) -> None:
    dp = group(sub, "digests", _("the digests waiting, and sending them now"))
    for action, handler, help_text in (
        ("status", cmd_digests_status, _("what waits for each list's next digest")),
        ("send", cmd_digests_send, _("send the digest of what waits now")),
    ):
        p = leaf(dp, action, handler, help_text)
        p.add_argument("list", nargs="?", metavar="LIST")
        p.add_argument("--all", action="store_true", help=_("every list that has posts waiting"))
