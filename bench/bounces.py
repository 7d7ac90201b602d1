"""DSNs/s decided by the milter through a real Postfix ÷ member posts/s, in one run.

One private Postfix instance (built from contrib/postfix/) with the mtaplugin milter in
front of one list database; Postfix's ``smtp-sink`` stands in for the members' server.
The same Python load generator (``--clients`` SMTP sessions, many messages per session)
sends, to the posting listener:

  * **DSNs**: a Postfix-shaped RFC 3464 report naming one member of the list (a
    different member each time), from ``<>`` to ``list-bounces@``: the milter parses it,
    finds the member, stores a bounce event and drops the recipient, all before the 250;
  * **posts**: a member's post to the same list (``--members`` members, expanded in
    place by the milter; Postfix delivers the copies to smtp-sink).

A rate is messages accepted per second of the client's wall time (the milter decides at
end of message, before the 250).  Rounds alternate; the best round of each counts.  The
run checks that every DSN left exactly one bounce event, and prints the machine's load.

    .venv/bin/python bench/bounces.py --messages 500 --clients 4 [--members 50] [--postgres]
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
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import func, select
from tqdm import tqdm

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import BounceEvent
from mtaplugin.testing.benchdb import bench_database, ready_for_mtas, start_smtp_sink
from mtaplugin.testing.lab import Lab

HOST = "lists.bench"
LIST = f"bench@{HOST}"
BOUNCES = f"bench-bounces@{HOST}"
POSTER = "member0@bench.example"

DSN = """\
From: MAILER-DAEMON@mx.bench.example (Mail Delivery System)
To: {bounces}
Subject: Undelivered Mail Returned to Sender
Message-ID: <dsn-{n}@mx.bench.example>
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B{n}"

--B{n}
Content-Type: text/plain

This is the mail system at host mx.bench.example.

<{member}>: host mx.bench.example[192.0.2.25] said: 550 5.1.1
    <{member}>: Recipient address rejected: User unknown

--B{n}
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.bench.example

Final-Recipient: rfc822; {member}
Original-Recipient: rfc822;{member}
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <{member}>: Recipient address rejected: User
    unknown

--B{n}
Content-Type: text/rfc822-headers

From: {poster}
To: {list}
Subject: A typical post

--B{n}--
"""

POST = """\
From: {poster}
To: {list}
Subject: A typical post
Message-ID: <post-{n}@bench.example>

{body}
"""


#: 4xx replies met (text → how many), each sent again
tempfails: dict[str, int] = {}


def member(i: int) -> str:
    return f"member{i}@bench.example"


def send_all(
    port: int,
    mail_from: str,
    rcpt: str,
    make: Callable[[int], bytes],
    count: int,
    clients: int,
    bar: tqdm,
) -> float:
    """Send ``count`` messages over ``clients`` sessions; messages accepted per second.  A
    4xx is sent again after a short pause, as a sending MTA would (counted in
    ``tempfails``)."""
    numbers = iter(range(count))
    lock = threading.Lock()
    errors: list[str] = []

    def client() -> None:
        with smtplib.SMTP("127.0.0.1", port, timeout=60) as smtp:
            while True:
                with lock:
                    n = next(numbers, None)
                if n is None:
                    return
                while True:
                    try:
                        smtp.sendmail(mail_from, [rcpt], make(n))
                        break
                    except smtplib.SMTPDataError as exc:
                        if not 400 <= exc.smtp_code < 500:
                            errors.append(f"{exc.smtp_code} {exc.smtp_error!r}")
                            return
                        with lock:
                            tempfails[exc.smtp_error.decode(errors="replace")[:80]] = (
                                tempfails.get(exc.smtp_error.decode(errors="replace")[:80], 0) + 1
                            )
                        time.sleep(0.05)
                    except smtplib.SMTPException as exc:
                        errors.append(f"{type(exc).__name__}: {exc}")
                        return
                bar.update(1)

    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise SystemExit(f"sending to {rcpt}: {errors[0]}")
    return count / elapsed


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=500, help="per round and kind")
    parser.add_argument("--clients", type=int, default=4, help="parallel SMTP sessions")
    parser.add_argument("--members", type=int, default=50, help="members of the list")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each, alternating")
    parser.add_argument("--database", default="", help="SQLAlchemy URL (default: new SQLite)")
    parser.add_argument(
        "--postgres", action="store_true", help="start a throw-away PostgreSQL server and use it"
    )
    args = parser.parse_args()
    # A SIGTERM still stops the private MTAs and mtaplugin (the finally below).
    if not ready_for_mtas("bench/bounces.py starts a private Postfix", ("smtp-sink", "postfix")):
        return 1
    print(f"before: {load()}", file=sys.stderr)
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-", dir="/tmp"))
    os.chmod(root, 0o755)
    url, pg = bench_database(root, args.postgres, args.database)
    upgrade(url)
    engine = make_engine(url)
    sessions = sessionmaker_for(engine)
    with sessions.begin() as s:
        domains.create(s, HOST)
        mlist = lists.create(s, LIST)
        for i in range(args.members):
            members.add(s, mlist, member(i))
    body = ("A line of a typical post, long enough to be one.\n" * 30).strip()

    def dsn(n: int) -> bytes:
        text = DSN.format(
            bounces=BOUNCES, n=n, member=member(n % args.members), poster=POSTER, list=LIST
        )
        return text.encode()

    def post(n: int) -> bytes:
        return POST.format(poster=POSTER, list=LIST, n=n, body=body).encode()

    sink, sink_port = start_smtp_sink()
    lab = Lab(
        root=root / "lab", database_url=url, name="mtaplugin-bench", external_sink_port=sink_port
    )
    dsns: list[float] = []
    posts: list[float] = []
    events = 0
    sent_dsns = 0
    try:
        lab.start()
        warm = 20
        total = 2 * warm + 2 * args.rounds * args.messages
        bar = tqdm(total=total, desc="messages", unit="msg", file=sys.stderr)
        port = lab.smtp_port
        send_all(port, "", BOUNCES, dsn, warm, 1, bar)
        send_all(port, POSTER, LIST, post, warm, 1, bar)
        sent_dsns = warm
        for _round in range(args.rounds):
            dsns.append(send_all(port, "", BOUNCES, dsn, args.messages, args.clients, bar))
            sent_dsns += args.messages
            posts.append(send_all(port, POSTER, LIST, post, args.messages, args.clients, bar))
        bar.close()
        with sessions() as s:
            events = s.scalar(select(func.count()).select_from(BounceEvent)) or 0
        print(f"after:  {load()}", file=sys.stderr)
    finally:
        lab.stop()
        sink.terminate()
        sink.wait(10)
        engine.dispose()
        if pg is not None:
            pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    best_dsn, best_post = max(dsns), max(posts)
    print(
        f"bounces: {args.messages} messages per kind x {args.rounds} rounds, "
        f"{args.clients} sessions, {args.members} members, milter on a unix socket, "
        f"database {url.split(':', 1)[0]}"
    )
    print(f"  DSNs decided (event stored, rcpt dropped): {best_dsn:8.1f} /s")
    print(f"  member posts decided (expanded in place):  {best_post:8.1f} /s")
    print(f"  ratio DSNs / posts:                        {best_dsn / best_post:8.2f}")
    print(f"  bounce events stored: {events} for {sent_dsns} DSNs sent")
    for text, times in tempfails.items():
        print(f"  4xx met and sent again: {times} x {text}")
    print(f"  {load()}")
    return 0 if events == sent_dsns else 1


if __name__ == "__main__":
    sys.exit(main())
