"""What attaching mtaplugin costs Postfix, in one run: mail that is not for a list, and list
posts against bare Postfix fanning the same post out.

One private Postfix (built from contrib/postfix/) with ``mtaplugin serve`` as the milter of
its posting listener, in the default configuration (the list's built-in archive on,
Mailman's default decorations), and a twin of that listener without the milter (the same
smtpd, restrictions and relay domains, ``smtpd_milters=``).  Postfix's own ``smtp-source``
sends and ``smtp-sink`` stands in for every receiving server, so the load generator costs
next to nothing and the figures are the MTA's.  Four paths, in interleaved rounds
(``--rounds``, default 5; each figure is the median of the rounds, with the lowest and
highest beside it):

  * **non-list mail, without the milter**: a message to a domain that is not a list's,
    relayed by the twin listener: the baseline;
  * **non-list mail, with the milter**: the same message on the posting listener, through
    mtaplugin (which finds no list and changes nothing);
  * **the limit**: bare Postfix fanning the post out from one queue file, the members
    added where mtaplugin's are (``mtaplugin.testing.benchlimit``): the same message from
    the same member with one ``RCPT TO``, a list address that the cleanup server of a
    third twin of the listener (no milter) expands to the ``--members`` member addresses
    through Postfix's own ``virtual_alias_maps``; after the rounds the maillog must show
    every one of its messages as one queue file with every member;
  * **a list post**: the member's post to the ``--members``-member list on the posting
    listener: decided, decorated, archived and fanned out in place;
  * with the archive on, **the floors** (rows ``floor: ...``, no goal; on PostgreSQL
    ``floor: postgresql: ...``): a no-op pymilter (``mtaplugin.testing.noop_milter``) on
    a Postfix of its own, sending the same post to the same members with a decorated
    copy's edits and deciding nothing; and the **required-work floor**, the same milter
    also committing each post to a journal before its 250 (mtaplugin's durability
    settings: a SQLite file; on PostgreSQL a database of the lab's server) and an
    archiver draining it into a compressed copy and a full-text index (FTS5; a
    ``tsvector`` on PostgreSQL) (``--journal --archiver``): the least any pymilter keeping
    issue 34's promise does.  After the rounds its archive must hold every post it
    answered.

Rates count messages accepted (the client's wall time) and delivered (until the maillog
shows every copy handed to the sink); beside them the CPU milliseconds per message of
mtaplugin's whole process tree (milter, worker, lookup server, API).  ``--backend both``
(the default) runs it all on SQLite, then on a throw-away PostgreSQL server.

    make bench                        # or
    .venv/bin/python bench/postfix_overhead.py [--backend sqlite] [--messages 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import fields
from pathlib import Path

from mtaplugin.testing import (
    benchlimit,
    benchreport,
    free_port,
    milterbench,
    noop_journal,
    noop_pg,
)
from mtaplugin.testing.benchdb import bench_database, ready_for_mtas
from mtaplugin.testing.benchreport import Goal, Spread, progress
from mtaplugin.testing.milterbench import (
    FANOUT,
    LIST,
    OTHER,
    OTHER_SENDER,
    BenchPostfix,
    OtherMilter,
    Path_,
    bare_port,
    bench_root,
    header,
    lab_pid,
    limit_port,
    make_database,
    members_of,
    mtaplugin_lab,
    noop_milter,
    rounds,
)
from mtaplugin.testing.noop_journal import FLOOR_DB
from mtaplugin.testing.postfix import PrivatePostfix
from mtaplugin.testing.postgres import PostgresServer

#: issue 34's goals
GOAL_NON_LIST = Goal(">=", 0.95)
GOAL_LIST = {"sqlite": Goal(">=", 0.7), "postgresql": Goal(">=", 0.8)}
#: the floors under goal (b), each a no-op pymilter (``noop_milter``) on a
#: Postfix of its own sending the post to the same members: name, title, its options
FLOORS = (
    ("noop-deco", "no-op pymilter, decorated edits", ()),
    ("noop-journal", "no-op pymilter, decorated edits, journal + archiver",
     ("--archiver", "--journal")),
)  # fmt: skip

#: the limit on the required-work floor's own Postfix
OWN_LIMIT = "the limit on the required-work floor's own Postfix"


def floor_name(backend: str, title: str) -> str:
    """A floor's row: ``floor: TITLE`` on SQLite, ``floor: postgresql: TITLE``."""
    return f"floor: {title}" if backend == "sqlite" else f"floor: {backend}: {title}"


def journal_of(root: Path, name: str, pg: PostgresServer | None) -> str:
    """Where the floor ``name`` journals: a SQLite file in its directory, or a database
    of its own on the lab's PostgreSQL server (the same server, its settings)."""
    if pg is None:
        return str(root / name / FLOOR_DB)
    database = name.replace("-", "_")
    pg.execute(f"CREATE DATABASE {database}")
    return pg.url(database)


def floor_paths(
    stack: contextlib.ExitStack[bool | None],
    root: Path,
    sink_port: int,
    n: int,
    pg: PostgresServer | None,
) -> tuple[list[Path_], dict[str, str]]:
    """The FLOORS' paths, their milters and Postfix instances entered on ``stack``; then
    the limit on the required-work floor's own Postfix (its listener as the lab's), so
    that the floor is also measured against a limit on the same Postfix instance.  With
    them, where each floor that journals does (its path's name → its ``--journal``)."""
    backend = "sqlite" if pg is None else "postgresql"
    (root / "floor-db").mkdir()
    url = f"sqlite:///{root / 'floor-db' / 'bench.db'}"  # Postfix's lookups: not the lab's
    make_database(url, n_members=n)
    members = [a for m in members_of(n)[1:] for a in ("--to", m)]
    paths: list[Path_] = []
    own: list[Path_] = []
    journals: dict[str, str] = {}
    for name, title, more in FLOORS:
        journal = [journal_of(root, name, pg)] if "--journal" in more else []
        sock, pid = stack.enter_context(
            noop_milter(root / name, "same", True, *members, *more, *journal)
        )
        other = OtherMilter(root / f"p-{name}", url, sink_port, f"bench-{name}", sock)
        if journal:
            old = other.postfix
            other.postfix = BenchPostfix(
                **{f.name: getattr(old, f.name) for f in fields(PrivatePostfix)},
                bare_port=free_port(),
                limit_port=free_port(),
                limit_aliases={FANOUT: members_of(n)},
            )
        other.postfix.start()
        stack.callback(other.postfix.stop)
        paths.append(Path_(floor_name(backend, title), other.postfix,
                           other.postfix.smtp_port, LIST, pid, copies=n))  # fmt: skip
        if journal:
            journals[paths[-1].name] = journal[0]
        if isinstance(other.postfix, BenchPostfix):
            own = [Path_(floor_name(backend, OWN_LIMIT), other.postfix,
                         other.postfix.limit_port, FANOUT, copies=n)]  # fmt: skip
    return paths + own, journals


def measure(backend: str, args: argparse.Namespace, report: benchreport.Report) -> None:
    with bench_root(f"mtaplugin-overhead-{backend}-") as (root, sink_port):
        url, pg = bench_database(root, backend == "postgresql")
        try:
            if pg is not None and args.pg_durable:
                noop_pg.make_durable(pg)
            make_database(url, n_members=args.members, archive=not args.no_archive)
            progress(f"{backend}: starting Postfix and mtaplugin serve")
            fanout = {FANOUT: members_of(args.members)}
            floored = not args.no_archive
            with contextlib.ExitStack() as stack:
                lab = stack.enter_context(mtaplugin_lab(root, url, sink_port, limit_aliases=fanout))
                ours, bare = lab_pid(lab), bare_port(lab)
                n = args.members
                paths = [
                    Path_("non-list mail, without the milter", lab.postfix, bare, OTHER,
                          sender=OTHER_SENDER),
                    Path_("non-list mail, with the milter", lab.postfix, lab.smtp_port, OTHER,
                          ours, sender=OTHER_SENDER),
                    Path_(f"the limit: bare Postfix, the post to {n} members from one "
                          "queue file", lab.postfix, limit_port(lab), FANOUT, copies=n),
                    Path_(f"list post, {n} members, through the milter", lab.postfix,
                          lab.smtp_port, LIST, ours, copies=n),
                ]  # fmt: skip
                floors, where = floor_paths(stack, root, sink_port, n, pg) if floored else ([], {})
                journals = {  # made now: the archiver's start is not in its CPU
                    p.name: noop_journal.Floor(where[p.name], p.cpu_pid)
                    for p in floors
                    if p.name in where and p.cpu_pid is not None
                }
                rounds(paths + floors, args.rounds, args.messages, args.clients, args.size)
                limit = paths[2]
                benchlimit.check_one_queue_file(
                    lab.postfix.maillog, lab.postfix.name, [n] * limit.sent
                )
                for floor in journals.values():  # the archive caught up, the CPU since
                    floor.settle()
        finally:
            if pg is not None:
                pg.stop()
    print(
        header(
            f"postfix_overhead, {backend}",
            f"{args.messages} messages of {args.size} bytes x {args.rounds} interleaved "
            f"rounds, {args.clients} sessions, milter on a unix socket, list of "
            f"{args.members} members, decorated, archive {'off' if args.no_archive else 'on'}"
            + (", PostgreSQL flushing every commit" if args.pg_durable else ""),
        )
    )
    print(f"  {'path':72} {'accepted/s':>20} {'delivered/s':>20} {'CPU ms/msg':>18}")
    for p in paths + floors:
        print(
            f"  {p.name:72} {p.accepted_s.text(0):>20} {p.delivered_s.text(0):>20} "
            f"{p.cpu.text() if p.cpu_pid else '':>18}"
        )
    nolist_bare, nolist, limit, post = paths
    default = backend == "sqlite" and not args.no_archive
    report.add(
        f"{backend}: non-list mail, milter attached ÷ the same listener without, delivered/s",
        nolist.delivered_s,
        "msg/s",
        baseline=f"without the milter {nolist_bare.delivered_s.text(0)}/s",
        ratio=Spread.ratios(nolist.delivered, nolist_bare.delivered),
        goal=GOAL_NON_LIST if default else None,
        key="non-list" if default else None,
    )
    report.add(
        f"{backend}: non-list mail, milter attached ÷ without, accepted/s",
        nolist.accepted_s,
        "msg/s",
        baseline=f"without the milter {nolist_bare.accepted_s.text(0)}/s",
        ratio=Spread.ratios(nolist.accepted, nolist_bare.accepted),
    )
    report.add(f"{backend}: non-list mail, mtaplugin CPU per message", nolist.cpu, "ms")
    goal = GOAL_LIST[backend] if not args.no_archive else None
    report.add(
        f"{backend}: list posts ({args.members} members) through the milter ÷ bare Postfix "
        "fanning them out, delivered/s",
        post.delivered_s,
        "posts/s",
        baseline=f"the limit {limit.delivered_s.text(0)}/s",
        ratio=Spread.ratios(post.delivered, limit.delivered),
        goal=goal,
        key=f"list-{backend}" if goal else None,
        limit=True,
    )
    report.add(
        f"{backend}: list posts through the milter ÷ the limit, accepted/s",
        post.accepted_s,
        "posts/s",
        baseline=f"the limit {limit.accepted_s.text(0)}/s",
        ratio=Spread.ratios(post.accepted, limit.accepted),
        limit=True,
    )
    report.add(f"{backend}: list post, mtaplugin CPU per post", post.cpu, "ms")
    own = floors[-1] if floors else None
    for p in floors[: len(FLOORS)]:  # what any pymilter doing this much reaches
        report.add(
            f"{p.name} ÷ the limit, {backend}, {args.members} members, delivered/s",
            p.delivered_s,
            "posts/s",
            baseline=f"the limit {limit.delivered_s.text(0)}/s",
            ratio=Spread.ratios(p.delivered, limit.delivered),
        )
        if own is not None and p.postfix is own.postfix:
            report.add(
                f"{p.name} ÷ the limit on its own Postfix, delivered/s",
                p.delivered_s,
                "posts/s",
                baseline=f"the limit there {own.delivered_s.text(0)}/s",
                ratio=Spread.ratios(p.delivered, own.delivered),
            )
        report.add(f"{p.name}, CPU per post in the rounds (its process tree)", p.cpu, "ms")
    if own is not None:
        report.add(
            f"{own.name} ÷ the limit on the lab's, delivered/s",
            own.delivered_s,
            "posts/s",
            baseline=f"the limit {limit.delivered_s.text(0)}/s",
            ratio=Spread.ratios(own.delivered, limit.delivered),
        )
        if p.name in journals:
            journals[p.name].rows(report, p.name.removeprefix("floor: "), p.sent)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    milterbench.add_arguments(parser)
    parser.add_argument("--members", type=int, default=3, help="members of the list")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument(
        "--no-archive", action="store_true", help="the list keeps no archive (not the default)"
    )
    parser.add_argument(
        "--pg-durable",
        action="store_true",
        help="PostgreSQL flushes every commit (fsync, synchronous_commit: its defaults)",
    )
    benchreport.add_arguments(parser)
    args = milterbench.apply_quick(parser.parse_args())
    # A SIGTERM still stops the private MTAs and mtaplugin (the finally blocks).
    if not ready_for_mtas(
        "bench/postfix_overhead.py starts a private Postfix",
        ("smtp-source", "smtp-sink", "postfix"),
    ):
        return 1
    report = benchreport.Report("postfix_overhead")
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    for backend in backends:
        measure(backend, args, report)
    report.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
