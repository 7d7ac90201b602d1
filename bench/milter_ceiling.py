"""How close a milter can come to bare Postfix: messages/s through one private Postfix
with a milter ÷ bare Postfix, for mtaplugin's milter and for a no-op pymilter that makes
the same recipient edits, in one run.

Every path is a private Postfix fed by ``smtp-source`` and delivering to ``smtp-sink``:

  * bare: straight to the member on the posting listener's twin without the milter: the
    baseline;
  * no-op, lean: a pymilter negotiating only RCPT and end of message (nothing of the
    message is sent to it), ``delrcpt`` + ``addrcpt``: the protocol's floor;
  * no-op, same callbacks: the callbacks and no-reply flags mtaplugin negotiates (each
    header field and body chunk a Python call, no round trip), the same recipient edits;
  * no-op, same callbacks, decorated: also the header and body edits of a decorated copy;
  * mtaplugin: the 1-member list (RCPT lookup, the rule chain, decorations unless
    ``--undecorated``, ``--dkim``: ARC-sealed and DKIM-signed), ``mtaplugin milter`` alone
    with the archive off: the milter's own ceiling, not the default configuration (that is
    bench/postfix_overhead.py);
  * mail for a domain that holds no list (``someone@other.bench``): bare Postfix, the no-op
    pymilter with mtaplugin's callbacks (it steps aside at DATA, as mtaplugin does), and
    mtaplugin's milter: what attaching any pymilter costs the mail that is not for a list.

Every path runs ``--rounds`` interleaved rounds; each figure is their median, with the
lowest and highest round beside it.

    .venv/bin/python bench/milter_ceiling.py [--quick] [--json PATH] [--messages 1000]
"""

from __future__ import annotations

import argparse
import sys

from mtaplugin.testing import benchreport, milterbench
from mtaplugin.testing.benchdb import ready_for_mtas
from mtaplugin.testing.benchreport import Goal, Spread
from mtaplugin.testing.milterbench import (
    LIST,
    MEMBER,
    OTHER,
    OtherMilter,
    Path_,
    bare_port,
    bench_root,
    header,
    lab_pid,
    make_database,
    mtaplugin_lab,
    noop_milter,
    rounds,
)

GOAL = Goal(">=", 0.7)
NON_LIST_BARE = "non-list mail, bare Postfix"
NON_LIST_NOOP = "non-list mail, no-op pymilter stepping aside at DATA"
NON_LIST_OURS = "non-list mail, mtaplugin milter stepping aside at DATA"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--undecorated", action="store_true", help="no subject prefix, no footer")
    parser.add_argument("--dkim", action="store_true", help="the list domain signs and seals")
    milterbench.add_arguments(parser)
    benchreport.add_arguments(parser)
    args = milterbench.apply_quick(parser.parse_args())
    if not ready_for_mtas(
        "bench/milter_ceiling.py starts private Postfix instances",
        ("smtp-source", "smtp-sink", "postfix"),
    ):
        return 1
    report = benchreport.Report("milter_ceiling")
    decorated = not args.undecorated
    with bench_root("mtaplugin-ceiling-") as (root, sink_port):
        url = f"sqlite:///{root / 'bench.db'}"
        make_database(url, decorated=decorated, dkim="rsa" if args.dkim else None, archive=False)
        with (
            mtaplugin_lab(root, url, sink_port, command=("milter",)) as lab,
            noop_milter(root / "lean", "lean", False) as (lean_sock, lean_pid),
            noop_milter(root / "same", "same", False) as (same_sock, same_pid),
            noop_milter(root / "deco", "same", True) as (deco_sock, deco_pid),
        ):
            others = [
                OtherMilter(root / "p-lean", url, sink_port, "bench-lean", lean_sock),
                OtherMilter(root / "p-same", url, sink_port, "bench-same", same_sock),
                OtherMilter(root / "p-deco", url, sink_port, "bench-deco", deco_sock),
            ]
            try:
                for o in others:
                    o.postfix.start()
                paths = [
                    Path_("bare Postfix", lab.postfix, bare_port(lab), MEMBER),
                    others[0].path("no-op pymilter, lean (RCPT + end of message)", pid=lean_pid),
                    others[1].path("no-op pymilter, mtaplugin's callbacks", pid=same_pid),
                    others[2].path(
                        "no-op pymilter, mtaplugin's callbacks, decorated edits", pid=deco_pid
                    ),
                    Path_("mtaplugin milter", lab.postfix, lab.smtp_port, LIST, lab_pid(lab)),
                    # mail that is not for a list: each milter steps aside at DATA
                    Path_(NON_LIST_BARE, lab.postfix, bare_port(lab), OTHER),
                    others[1].path(NON_LIST_NOOP, rcpt=OTHER, pid=same_pid),
                    Path_(NON_LIST_OURS, lab.postfix, lab.smtp_port, OTHER, lab_pid(lab)),
                ]
                rounds(paths, args.rounds, args.messages, args.clients, args.size)
            finally:
                for o in others:
                    o.postfix.stop()
    what = (
        f"{args.messages} messages of {args.size} bytes x {args.rounds} interleaved rounds, "
        f"{args.clients} sessions, unix sockets, SQLite, archive off, list "
        f"{'decorated' if decorated else 'undecorated'}{', signed' if args.dkim else ''}"
    )
    print(header("milter_ceiling", what))
    bare, bare_other = paths[0], paths[5]
    report.add(f"{bare.name}, delivered", bare.delivered_s, "msg/s")
    report.add(f"{bare_other.name}, delivered", bare_other.delivered_s, "msg/s")
    for p in paths[1:5] + paths[6:]:
        ours = p is paths[4]
        base = bare if p in paths[:5] else bare_other
        if p.cpu_pid is not None:
            report.add(f"{p.name}, milter CPU per message", p.cpu, "ms")
        report.add(
            f"{p.name} ÷ bare Postfix, delivered",
            p.delivered_s,
            "msg/s",
            baseline=f"bare Postfix {base.delivered_s.text(0)}/s",
            ratio=Spread.ratios(p.delivered, base.delivered),
            goal=GOAL if ours else None,
        )
    report.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
