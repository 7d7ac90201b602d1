"""``mtaplugin archive export|import|rebuild|remove``: a list's archive from the command
line (see docs/archive.md).

- ``export LIST [--month YYYY-MM | --thread ID] > FILE``: an mboxrd file on stdout.
- ``import LIST MBOX [--pipermail]`` / ``import LIST --hyperkitty-db URL``: Pipermail's or
  HyperKitty's mbox, or HyperKitty's own database, into the archive;
  progress on a terminal; run again, it skips what is there; ``--pipermail`` keeps
  Pipermail's article numbers for the old links.
- ``rebuild LIST``: read every post again (text, attachments), thread it and index it
  for search again.
- ``remove LIST HASH`` / ``remove LIST --author EMAIL``: blank posts; their permalink
  answers 410.
"""

from __future__ import annotations

import argparse
import re
import sys

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, actor, add_actor, group, list_leaf, scope
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _

_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


def _month(value: str) -> tuple[int, int]:
    m = _MONTH.match(value.strip())
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise InvalidInput("--month", _("give the month as YYYY-MM, e.g. 2026-12"))
    return int(m.group(1)), int(m.group(2))


def cmd_archive_export(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.archive import mbox
    from mtaplugin.manage import lists

    if args.month and args.thread is not None:
        raise InvalidInput("--month", _("give --month or --thread, not both"))
    month = _month(args.month) if args.month else None
    out = sys.stdout.buffer
    with scope(settings) as s:
        mlist = lists.get(s, args.list)
        if month is not None:
            posts = mbox.month_posts(s, mlist.id, *month)
        elif args.thread is not None:
            from mtaplugin.model.archive import ArchiveThread

            thread = s.get(ArchiveThread, args.thread)
            if thread is None or thread.mailing_list_id != mlist.id:
                raise InvalidInput("--thread", _("no such thread in this list's archive"))
            posts = mbox.thread_posts(s, thread.id)
        else:
            posts = mbox.list_posts(s, mlist.id)
        for chunk in mbox.export(posts):
            out.write(chunk)
    out.flush()
    return 0


def cmd_archive_import(args: argparse.Namespace, settings: config.Settings) -> int:
    if args.hyperkitty_db:
        if args.mbox or args.pipermail:
            raise InvalidInput(
                "MBOX", _("give an mbox file or --hyperkitty-db, not both (--pipermail: an mbox)")
            )
        return import_archive(
            settings, args.list, "", pipermail=False, hyperkitty=args.hyperkitty_db
        )
    if not args.mbox:
        raise InvalidInput("MBOX", _("give the mbox file to import, or --hyperkitty-db URL"))
    return import_archive(settings, args.list, args.mbox, pipermail=args.pipermail)


def import_archive(
    settings: config.Settings,
    listname: str,
    path: str,
    *,
    pipermail: bool,
    hyperkitty: str = "",
) -> int:
    """The mbox ``path`` into the archive of ``listname``, with progress on a terminal;
    ``pipermail``: it is the list's Pipermail mbox, whose article numbers are kept so
    that ``/pipermail/`` links to its posts redirect (:mod:`mtaplugin.archive.pipermail`);
    ``hyperkitty``: instead of an mbox, HyperKitty's database at that URL
    (:mod:`mtaplugin.importers.hyperkitty_db`)."""
    from mtaplugin import wiring
    from mtaplugin.archive import pipermail as numbers
    from mtaplugin.archive.importing import Imported, import_mbox, import_posts
    from mtaplugin.importers import hyperkitty_db
    from mtaplugin.manage import lists

    world = wiring.build(settings)
    with world.sessions() as s:
        mlist = lists.get(s, listname)
        list_id, address = mlist.id, mlist.posting_address
    tty = sys.stderr.isatty()

    def progress(done: Imported) -> None:
        if tty:
            print(
                "\r"
                + _("{read} read, {archived} archived, {skipped} there already").format(
                    read=done.read, archived=done.archived, skipped=done.skipped
                ),
                end="",
                file=sys.stderr,
                flush=True,
            )

    def numbered(count: int) -> None:
        if tty:
            print(
                "\r" + _("{count} Pipermail numbers kept").format(count=count),
                end="",
                file=sys.stderr,
                flush=True,
            )

    if hyperkitty:
        source = hyperkitty_db.posts(hyperkitty, address)
        done = import_posts(world.sessions, list_id, source, world.clock(), progress)
    else:
        try:
            stream = open(path, "rb")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise InvalidInput("MBOX", str(exc)) from exc
        with stream:
            done = import_mbox(world.sessions, list_id, stream, world.clock(), progress)
            if pipermail:
                stream.seek(0)
                numbers.number_posts(world.sessions, list_id, stream, numbered)
    if tty:
        print(file=sys.stderr)
    print(
        _("{list}: {read} posts read, {archived} archived, {skipped} there already").format(
            list=listname, read=done.read, archived=done.archived, skipped=done.skipped
        )
    )
    return 0


def cmd_archive_rebuild(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin import wiring
    from mtaplugin.archive import search, store, threads
    from mtaplugin.db import session_scope
    from mtaplugin.manage import lists

    world = wiring.build(settings)
    with session_scope(world.sessions) as s:
        mlist = lists.get(s, args.list)
        posts = store.reread(s, mlist.id, world.clock())
        made = threads.rebuild(s, mlist.id)
        search.reindex(s, mlist.id)  # the search index too (after a change of language)
    print(
        _("{list}: {posts} posts read again, {threads} threads").format(
            list=args.list, posts=posts, threads=made
        )
    )
    return 0


def cmd_archive_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin import wiring
    from mtaplugin.archive import removal
    from mtaplugin.db import session_scope
    from mtaplugin.manage import lists
    from mtaplugin.model import AuditEntry

    if bool(args.hash) == bool(args.author):
        raise InvalidInput("HASH", _("give a post's HASH or --author EMAIL (one of them)"))
    world = wiring.build(settings)
    now = world.clock()
    who = actor(args)
    with session_scope(world.sessions) as s:
        mlist = lists.get(s, args.list)
        if args.hash:
            n = removal.remove(s, mlist, args.hash, now)
            what = {"hash": args.hash.upper()}
        else:
            n = removal.remove_author(s, mlist, args.author, now)
            what = {"author": args.author.lower()}
        s.add(
            AuditEntry(
                at=now, mailing_list_id=mlist.id, actor=who, action="archive-remove", detail=what
            )
        )
    print(_("{list}: {n} posts removed from the archive").format(list=args.list, n=n))
    return 0


def register(sub: Subparsers) -> None:
    ap = group(sub, "archive", _("the list archive: export, import, rebuild, remove"))
    p = list_leaf(ap, "export", cmd_archive_export, _("write the archive (or a month) as mboxrd"))
    p.add_argument("--month", metavar="YYYY-MM", help=_("only this month"))
    p.add_argument("--thread", type=int, metavar="ID", help=_("only this thread"))
    p = list_leaf(
        ap, "import", cmd_archive_import, _("import an mbox file (Pipermail, HyperKitty)")
    )
    p.add_argument("mbox", metavar="MBOX", nargs="?", default="")
    p.add_argument(
        "--hyperkitty-db",
        metavar="URL",
        default="",
        help=_(
            "instead of an mbox, HyperKitty's own database (an SQLAlchemy URL): Message-IDs, "
            "dates, threads and attachments kept, so that HyperKitty's links redirect"
        ),
    )
    p.add_argument(
        "--pipermail",
        action="store_true",
        help=_(
            "the mbox is the list's Pipermail mbox (LIST.mbox): keep its article numbers, "
            "so that /pipermail/ links to its posts redirect"
        ),
    )
    list_leaf(ap, "rebuild", cmd_archive_rebuild, _("read the posts and thread them again"))
    p = list_leaf(ap, "remove", cmd_archive_remove, _("remove a post, or every post of an author"))
    p.add_argument("hash", metavar="HASH", nargs="?", help=_("the post's message-id hash"))
    p.add_argument("--author", metavar="EMAIL", help=_("every post of this address"))
    add_actor(p)
