"""Messages/s through Postfix with the mtaplugin milter ÷ bare Postfix, in one run.

One private Postfix instance (built from contrib/postfix/), one list database, and
Postfix's own load tools on both ends, so that the load generator costs next to nothing
and the figure is the MTA's: ``smtp-source`` sends, ``smtp-sink`` stands in for the
members' server.  The same messages are sent

  * with the milter: to a 1-member list on the posting listener (relay_domains lookup in
    the list database, the milter at RCPT and end of message, delrcpt/addrcpt);
  * bare: straight to the member on the re-injection listener (no milter): the baseline.

Rates count messages accepted (the client's wall time) and delivered (until the maillog
shows every copy sent).  Rounds alternate between the two; the best round of each counts.

    make bench                        # or
    .venv/bin/python bench/postfix_overhead.py --messages 2000 --clients 4 [--postgres]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import dkim as dkim_keys
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import Template
from mtaplugin.model.enums import TemplateScope
from mtaplugin.testing import benchreport, wait_for
from mtaplugin.testing.benchdb import bench_database, ready_for_mtas, start_smtp_sink
from mtaplugin.testing.lab import Lab

MEMBER = "member@bench.example"
LIST = "bench@lists.bench"


def sent_count(lab: Lab) -> int:
    return lab.postfix.log().count("status=sent")


def run(
    lab: Lab, port: int, rcpt: str, count: int, clients: int, size: int, bar: tqdm
) -> tuple[float, float]:
    """Send ``count`` messages over ``clients`` sessions; return (accepted/s, delivered/s)."""
    before = sent_count(lab)
    start = time.perf_counter()
    proc = subprocess.run(
        [
            "smtp-source",
            "-d",  # many messages per connection, as a busy sending MTA does
            "-s", str(clients),
            "-m", str(count),
            "-l", str(size),
            "-S", "A typical post",  # without a Subject: the no-subject rule would hold it
            "-f", MEMBER,
            "-t", rcpt,
            f"127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    accepted = time.perf_counter() - start
    if proc.returncode != 0 or proc.stderr.strip():
        raise SystemExit(f"smtp-source to {rcpt}: {proc.stdout}{proc.stderr}")
    wait_for(lambda: sent_count(lab) - before >= count, timeout=600, interval=0.05)
    delivered = time.perf_counter() - start
    bar.update(1)
    return count / accepted, count / delivered


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=2000, help="per round")
    parser.add_argument("--clients", type=int, default=4, help="parallel SMTP sessions")
    parser.add_argument("--size", type=int, default=2000, help="message size in bytes")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each, alternating")
    parser.add_argument("--database", default="", help="SQLAlchemy URL (default: new SQLite)")
    parser.add_argument(
        "--postgres", action="store_true", help="start a throw-away PostgreSQL server and use it"
    )
    parser.add_argument(
        "--undecorated",
        action="store_true",
        help="a list without subject prefix and footer (List-* headers only: no body rewrite)",
    )
    parser.add_argument(
        "--dkim",
        action="store_true",
        help="give the list domain a DKIM key: every copy is ARC-sealed and DKIM-signed",
    )
    benchreport.add_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.messages, args.rounds = min(args.messages, 200), 1
    report = benchreport.Report("postfix_overhead" + ("_dkim" if args.dkim else ""))
    # A SIGTERM still stops the private MTAs and mtaplugin (the finally below).
    if not ready_for_mtas(
        "bench/postfix_overhead.py starts a private Postfix",
        ("smtp-source", "smtp-sink", "postfix"),
    ):
        return 1
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-", dir="/tmp"))
    os.chmod(root, 0o755)
    url, pg = bench_database(root, args.postgres, args.database)
    upgrade(url)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, "lists.bench")
        mlist = lists.create(s, LIST)
        members.add(s, mlist, MEMBER)
        if args.dkim:
            dkim_keys.create(s, "lists.bench")
        if args.undecorated:
            mlist.subject_prefix = ""
            s.add(
                Template(
                    scope=TemplateScope.list,
                    mailing_list_id=mlist.id,
                    name="list:member:regular:footer",
                    text="",
                )
            )
    engine.dispose()
    sink, sink_port = start_smtp_sink()
    lab = Lab(
        root=root / "lab", database_url=url, name="mtaplugin-bench", external_sink_port=sink_port
    )
    milter: list[tuple[float, float]] = []
    bare: list[tuple[float, float]] = []
    try:
        lab.start()
        bar = tqdm(total=2 * args.rounds + 2, desc="rounds", unit="round", file=sys.stderr)
        # Warm up both paths (process start, caches, the list snapshot).
        run(lab, lab.smtp_port, LIST, 50, 1, args.size, bar)
        run(lab, lab.postfix.reinject_port, MEMBER, 50, 1, args.size, bar)
        for _round in range(args.rounds):
            milter.append(
                run(lab, lab.smtp_port, LIST, args.messages, args.clients, args.size, bar)
            )
            bare.append(
                run(
                    lab,
                    lab.postfix.reinject_port,
                    MEMBER,
                    args.messages,
                    args.clients,
                    args.size,
                    bar,
                )
            )
        bar.close()
    finally:
        lab.stop()
        sink.terminate()
        sink.wait(10)
        if pg is not None:
            pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    m_acc, m_del = max(a for a, _d in milter), max(d for _a, d in milter)
    b_acc, b_del = max(a for a, _d in bare), max(d for _a, d in bare)
    print(
        f"postfix_overhead: {args.messages} messages of {args.size} bytes x {args.rounds} "
        f"rounds, {args.clients} sessions, milter on a unix socket, database "
        f"{url.split(':', 1)[0]}, list {'undecorated' if args.undecorated else 'decorated'}"
        f"{', ARC-sealed and DKIM-signed' if args.dkim else ''}"
    )
    print(
        f"  bare Postfix (re-injection listener): {b_acc:8.1f} accepted/s {b_del:8.1f} delivered/s"
    )
    print(
        f"  Postfix + mtaplugin milter:           {m_acc:8.1f} accepted/s {m_del:8.1f} delivered/s"
    )
    print(
        f"  ratio milter / bare:                  {m_acc / b_acc:8.2f} accepted   "
        f"{m_del / b_del:8.2f} delivered"
    )
    kind = "signed" if args.dkim else "undecorated" if args.undecorated else "decorated"
    report.add(
        f"milter ÷ bare Postfix, {kind}, delivered/s",
        m_del,
        "posts/s",
        baseline=f"bare Postfix {b_del:.0f}/s",
        ratio=m_del / b_del,
        goal=">= 0.7",
        met=m_del / b_del >= 0.7,
    )
    report.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
