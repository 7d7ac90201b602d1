"""Messages/s through Postfix with the mtaplugin milter ÷ bare Postfix, in one run.

One private Postfix instance (contrib/postfix/ snippets), one SQLite or PostgreSQL list
database, an aiosmtpd sink.  The same messages are sent

  * with the milter: to a 1-member list on the posting listener (relay_domains lookup,
    milter at RCPT and end of message, delrcpt/addrcpt to the member);
  * bare: straight to the member on the re-injection listener (no milter), the baseline.

Both runs use the same number of client threads, the same message and the same sink.
Rates count messages accepted (250 after DATA) and delivered to the sink.

    make bench                        # or
    .venv/bin/python bench/postfix_overhead.py --messages 1000 --clients 4
"""

from __future__ import annotations

import argparse
import os
import shutil
import smtplib
import sys
import tempfile
import threading
import time
from pathlib import Path

from tqdm import tqdm

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists, members
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab

MEMBER = "member@bench.example"
LIST = "bench@lists.bench"


def message(n: int) -> bytes:
    return (
        f"From: {MEMBER}\r\nTo: {LIST}\r\nSubject: bench {n}\r\n"
        f"Message-ID: <bench-{n}-{time.monotonic_ns()}@bench.example>\r\n\r\n"
        + "A line of a typical short post.\r\n"
        * 40
    ).encode()


def run(
    lab: Lab, port: int, rcpt: str, count: int, clients: int, label: str
) -> tuple[float, float]:
    """Send ``count`` messages over ``clients`` connections; return (accepted/s, delivered/s)."""
    lab.sink.clear()
    errors: list[str] = []
    bar = tqdm(total=count, desc=label, unit="msg", file=sys.stderr, leave=False)
    lock = threading.Lock()
    per_client = [count // clients + (1 if i < count % clients else 0) for i in range(clients)]

    def client(k: int, n: int) -> None:
        with smtplib.SMTP("127.0.0.1", port, timeout=60) as smtp:
            smtp.ehlo("bench.client")
            for i in range(n):
                try:
                    smtp.sendmail(MEMBER, [rcpt], message(k * 1_000_000 + i))
                except smtplib.SMTPException as exc:
                    errors.append(str(exc))
                with lock:
                    bar.update(1)

    threads = [threading.Thread(target=client, args=(k, n)) for k, n in enumerate(per_client)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    accepted = time.perf_counter() - start
    bar.close()
    if errors:
        raise SystemExit(f"{label}: {len(errors)} refused, first: {errors[0]}")
    wait_for(lambda: len(lab.sink.messages) >= count, timeout=300, interval=0.02)
    delivered = time.perf_counter() - start
    return count / accepted, count / delivered


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument(
        "--database", default="", help="SQLAlchemy URL (default: a new SQLite file)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of each")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/postfix_overhead.py starts a private Postfix: run it as root", file=sys.stderr)
        return 1
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-", dir="/tmp"))
    os.chmod(root, 0o755)
    url = args.database or f"sqlite:///{root / 'bench.db'}"
    upgrade(url)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, "lists.bench")
        mlist = lists.create(s, LIST)
        members.add(s, mlist, MEMBER)
    engine.dispose()
    lab = Lab(root=root / "lab", database_url=url, name="mtaplugin-bench")
    try:
        lab.start()
        # Warm up both paths (process start, connection caches).
        run(lab, lab.smtp_port, LIST, 20, 1, "warm-up (milter)")
        run(lab, lab.postfix.reinject_port, MEMBER, 20, 1, "warm-up (bare)")
        milter: list[tuple[float, float]] = []
        bare: list[tuple[float, float]] = []
        for r in range(args.rounds):
            milter.append(
                run(lab, lab.smtp_port, LIST, args.messages, args.clients, f"milter {r + 1}")
            )
            bare.append(
                run(
                    lab,
                    lab.postfix.reinject_port,
                    MEMBER,
                    args.messages,
                    args.clients,
                    f"bare {r + 1}",
                )
            )
    finally:
        lab.stop()
        shutil.rmtree(root, ignore_errors=True)
    m_acc = max(a for a, _d in milter)
    m_del = max(d for _a, d in milter)
    b_acc = max(a for a, _d in bare)
    b_del = max(d for _a, d in bare)
    db = url.split(":", 1)[0]
    print(
        f"postfix_overhead: {args.messages} messages x {args.rounds} rounds, "
        f"{args.clients} clients, milter on a unix socket, database {db}"
    )
    print(
        f"  bare Postfix (re-injection listener): {b_acc:8.1f} accepted/s  {b_del:8.1f} delivered/s"
    )
    print(
        f"  Postfix + mtaplugin milter:           {m_acc:8.1f} accepted/s  {m_del:8.1f} delivered/s"
    )
    ratio_acc, ratio_del = m_acc / b_acc, m_del / b_del
    print(f"  ratio milter / bare:{'':18}{ratio_acc:8.2f} accepted    {ratio_del:8.2f} delivered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
