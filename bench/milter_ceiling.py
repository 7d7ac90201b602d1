"""How close a milter can come to bare Postfix: messages/s through one private Postfix
with a milter ÷ bare Postfix, for mtaplugin's milter and for a no-op pymilter that makes
the same recipient edits, in one run.

Every path is a private Postfix fed by ``smtp-source`` and delivering to ``smtp-sink``:

  * bare: straight to the member on the re-injection listener (no milter): the baseline;
  * no-op, lean: a pymilter negotiating only RCPT and end of message (nothing of the
    message is sent to it), ``delrcpt`` + ``addrcpt``: the protocol's floor;
  * no-op, same callbacks: the callbacks and no-reply flags mtaplugin negotiates (each
    header field and body chunk a Python call, no round trip), the same recipient edits;
  * no-op, same callbacks, decorated: also the header and body edits of a decorated copy;
  * mtaplugin: the 1-member list (RCPT lookup, the rule chain, decorations unless
    ``--undecorated``, ``--dkim``: ARC-sealed and DKIM-signed).

    .venv/bin/python bench/milter_ceiling.py [--quick] [--json PATH] [--messages 1000]
"""

from __future__ import annotations

import argparse
import sys

from mtaplugin.testing import milterbench
from mtaplugin.testing.benchdb import ready_for_mtas
from mtaplugin.testing.milterbench import (
    LIST,
    MEMBER,
    OtherMilter,
    Path_,
    Row,
    bench_root,
    header,
    lab_pid,
    make_database,
    mtaplugin_lab,
    noop_milter,
    rounds,
    write_json,
)

GOAL = 0.7


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--undecorated", action="store_true", help="no subject prefix, no footer")
    parser.add_argument("--dkim", action="store_true", help="the list domain signs and seals")
    milterbench.add_arguments(parser)
    args = milterbench.parse_arguments(parser)
    if not ready_for_mtas(
        "bench/milter_ceiling.py starts private Postfix instances",
        ("smtp-source", "smtp-sink", "postfix"),
    ):
        return 1
    decorated = not args.undecorated
    with bench_root("mtaplugin-ceiling-") as (root, sink_port):
        url, _pem = make_database(root, decorated=decorated, dkim="rsa" if args.dkim else None)
        with (
            mtaplugin_lab(root, url, sink_port) as lab,
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
                    Path_("bare Postfix", lab.postfix, lab.postfix.reinject_port, MEMBER),
                    others[0].path("no-op pymilter, lean (RCPT + end of message)", pid=lean_pid),
                    others[1].path("no-op pymilter, mtaplugin's callbacks", pid=same_pid),
                    others[2].path(
                        "no-op pymilter, mtaplugin's callbacks, decorated edits", pid=deco_pid
                    ),
                    Path_("mtaplugin milter", lab.postfix, lab.smtp_port, LIST, lab_pid(lab)),
                ]
                rounds(
                    paths,
                    args.rounds,
                    args.messages,
                    args.clients,
                    args.size,
                    lambda s: print(s, file=sys.stderr),
                )
            finally:
                for o in others:
                    o.postfix.stop()
    bare_acc, bare_del = paths[0].best
    what = (
        f"{args.messages} messages of {args.size} bytes x {args.rounds} rounds, "
        f"{args.clients} sessions, unix sockets, SQLite, list "
        f"{'decorated' if decorated else 'undecorated'}{', signed' if args.dkim else ''}"
    )
    print(header("milter_ceiling", what))
    print(
        f"  {'path':58} {'accepted/s':>10} {'ratio':>6} {'delivered/s':>11} {'ratio':>6}"
        f" {'milter CPU ms/msg':>17}"
    )
    rows: list[Row] = []
    for p in paths:
        acc, dlv = p.best
        print(
            f"  {p.name:58} {acc:10.1f} {acc / bare_acc:6.2f} {dlv:11.1f} {dlv / bare_del:6.2f}"
            f" {p.milter_cpu_ms:17.2f}"
        )
        if p is paths[0]:
            rows.append(Row(f"{p.name}, delivered", dlv, "msg/s", "", None))
            continue
        is_ours = p is paths[-1]
        if p.milter_pid is not None:
            rows.append(Row(f"{p.name}, milter CPU per message", p.milter_cpu_ms, "ms", ""))
        rows.append(
            Row(
                f"{p.name}, delivered",
                dlv,
                "msg/s",
                "bare Postfix, delivered",
                dlv / bare_del,
                f">= {GOAL}" if is_ours else None,
                (dlv / bare_del >= GOAL) if is_ours else None,
            )
        )
    write_json(args.json, "milter_ceiling", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
