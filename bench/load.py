"""A steady offered load on the private Postfix with the mtaplugin milter: what is answered,
how fast, and that nothing is lost.

Many concurrent SMTP clients offer posts at a fixed rate (open loop: a post's start is due
at its time whether or not earlier ones were answered; at most ``--clients`` sessions at
once, one session per post, as the world's servers send).  The mix:

  * 60 % member posts to a list of 5 members: 250, then one copy for each member at the sink;
  * 15 % nonmember posts: 250 and held (a held row in the database);
  * 5 % posts from a banned address: 5xx naming the rule;
  * 10 % email commands (``help`` to ``-request``): 250 and a reply at the sink;
  * 10 % bounces (a DSN from ``<>`` to ``-bounces``): 250 and a bounce event recorded.

Each reply code and the time from connect to the final answer are recorded.  Afterwards the
bench waits for the backlog (Postfix's queue and mtaplugin's outbox) to drain, then counts
at the sink (Postfix's smtp-sink writing every delivery to a dump file) and in the
database: lost = what a 250 promised − what arrived; it must be 0.

The baseline, in the same run: bare Postfix (the re-injection listener, no milter) offered
the same load; the ratios are milter ÷ bare.  The DNS of the run is a loopback server.

    .venv/bin/python bench/load.py [--quick] [--backend sqlite|postgresql|both] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.enums import OutboxStatus
from mtaplugin.manage import bans, domains, lists, members
from mtaplugin.model import HeldMessage
from mtaplugin.model.delivery import BounceEvent, OutboxMessage
from mtaplugin.testing import free_port, wait_for_port
from mtaplugin.testing.benchdb import bench_database, machine_load, ready_for_mtas
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.lab import Lab

NAME = "load"
DOMAIN = "lists.load"
LIST = f"team@{DOMAIN}"
MEMBERS = tuple(f"m{i}@members.load" for i in range(1, 6))
BANNED = "banned@senders.load"
OWNER = "owner@owners.load"
#: kind → share of the offered posts
MIX = {"member": 60, "nonmember": 15, "banned": 5, "command": 10, "bounce": 10}
GOAL_4XX = 1.0  # percent
#: seconds after the window in which a post still due may start; later ones are not offered
GRACE = 1.0


@dataclass
class Result:
    kind: str
    n: int
    code: int  # the final answer; 0: no answer (connection failed or timed out)
    text: str
    seconds: float
    late: float  # how late the session started after its due time


@dataclass
class Phase:
    name: str
    #: posts due in the window
    offered: int
    #: seconds from the first post to the last answer
    duration: float
    #: seconds of the window in which posts are due
    window: float = 0.0
    results: list[Result] = field(default_factory=list)

    @property
    def offered_results(self) -> list[Result]:
        """The posts the clients started (not those the window closed on)."""
        return [r for r in self.results if r.code >= 0]

    def codes(self) -> Counter[str]:
        return Counter(
            "none" if r.code == 0 else f"{r.code // 100}xx" for r in self.offered_results
        )


# --- the posts ----------------------------------------------------------------------------


def kinds(count: int, seed: int = 1) -> list[str]:
    pool = [k for k, share in MIX.items() for _i in range(share)]
    rnd = random.Random(seed)
    return [rnd.choice(pool) for _i in range(count)]


def post(tag: str, kind: str, n: int) -> tuple[str, list[str], bytes]:
    """(envelope sender, recipients, message) of post ``n``; ``tag`` marks the phase."""
    marker = f"{tag}-{kind}-{n}"
    date = "Fri, 04 Dec 2026 12:00:00 +0000"
    if kind == "member":
        sender = MEMBERS[n % len(MEMBERS)]
        rcpt, subject, body = LIST, f"load {marker}", "A post to the list.\n"
    elif kind == "nonmember":
        sender = f"nm-{tag}-{n}@senders.load"
        rcpt, subject, body = LIST, f"load {marker}", "A nonmember's post.\n"
    elif kind == "banned":
        sender = BANNED
        rcpt, subject, body = LIST, f"load {marker}", "A banned poster.\n"
    elif kind == "command":
        sender = f"cmd-{tag}-{n}@senders.load"
        rcpt, subject, body = f"team-request@{DOMAIN}", "help", "help\n"
    else:
        sender = ""
        rcpt, subject = f"team-bounces@{DOMAIN}", "Undelivered Mail Returned to Sender"
        gone = f"gone-{tag}-{n}@members.load"
        body = ""
        boundary = f"b-{marker}"
        message = (
            f"From: MAILER-DAEMON@mx.members.load\r\nTo: team-bounces@{DOMAIN}\r\n"
            f"Subject: {subject}\r\nDate: {date}\r\nMessage-ID: <{marker}@mx.members.load>\r\n"
            "MIME-Version: 1.0\r\n"
            f'Content-Type: multipart/report; report-type=delivery-status; boundary="{boundary}"'
            f"\r\n\r\n--{boundary}\r\nContent-Type: text/plain\r\n\r\nThe mail could not be "
            f"delivered.\r\n\r\n--{boundary}\r\nContent-Type: message/delivery-status\r\n\r\n"
            "Reporting-MTA: dns; mx.members.load\r\n\r\n"
            f"Final-Recipient: rfc822; {gone}\r\nAction: failed\r\nStatus: 5.1.1\r\n"
            f"Diagnostic-Code: smtp; 550 5.1.1 no such user\r\n\r\n--{boundary}--\r\n"
        )
        return sender, [rcpt], message.encode()
    message = (
        (
            f"From: {sender}\r\nTo: {rcpt}\r\nSubject: {subject}\r\nDate: {date}\r\n"
            f"Message-ID: <{marker}@senders.load>\r\n\r\n{body}"
        )
        .replace("\n", "\r\n")
        .replace("\r\r\n", "\r\n")
    )
    return sender, [rcpt], message.encode()


# --- the SMTP clients ---------------------------------------------------------------------


async def _reply(reader: asyncio.StreamReader) -> tuple[int, str]:
    lines = []
    while True:
        line = await reader.readline()
        if not line:
            raise ConnectionError("connection closed")
        lines.append(line.decode(errors="replace").rstrip())
        if len(line) < 4 or line[3:4] != b"-":
            break
    return int(lines[-1][:3]), lines[-1]


async def session(port: int, sender: str, rcpts: list[str], data: bytes) -> tuple[int, str]:
    """One SMTP session for one post: the final answer (the first refusal, or DATA's)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        code, text = await _reply(reader)
        if code != 220:
            return code, text
        for command in (b"EHLO load.client\r\n", f"MAIL FROM:<{sender}>\r\n".encode()):
            writer.write(command)
            code, text = await _reply(reader)
            if code >= 400:
                return code, text
        for rcpt in rcpts:
            writer.write(f"RCPT TO:<{rcpt}>\r\n".encode())
            code, text = await _reply(reader)
            if code >= 400:
                return code, text
        writer.write(b"DATA\r\n")
        code, text = await _reply(reader)
        if code != 354:
            return code, text
        writer.write(data.replace(b"\r\n.", b"\r\n..") + b"\r\n.\r\n")
        code, text = await _reply(reader)
        writer.write(b"QUIT\r\n")
        return code, text
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def offer(
    port: int, tag: str, rate: float, duration: float, clients: int, timeout: float
) -> list[Result]:
    """Offer ``rate`` posts/s for ``duration`` seconds over at most ``clients`` sessions."""
    count = int(rate * duration)
    mix = kinds(count)
    slots = asyncio.Semaphore(clients)
    results: list[Result] = []
    start = time.perf_counter()

    async def one(n: int, kind: str) -> None:
        due = start + n / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        async with slots:
            began = time.perf_counter()
            if began > start + duration + GRACE:
                # the clients could not start it within the window: not offered
                results.append(Result(kind, n, -1, "not offered", 0.0, began - due))
                return
            sender, rcpts, data = post(tag, kind, n)
            try:
                code, text = await asyncio.wait_for(session(port, sender, rcpts, data), timeout)
            except (OSError, ConnectionError, TimeoutError, ValueError) as exc:
                code, text = 0, f"{type(exc).__name__}: {exc}"
            results.append(Result(kind, n, code, text, time.perf_counter() - began, began - due))

    await asyncio.gather(*(one(n, kind) for n, kind in enumerate(mix)))
    return results


# --- the sink, the backlog and the count --------------------------------------------------


def start_dump_sink(directory: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    """smtp-sink writing every transaction to ``directory/dump``."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.chown(directory, "postfix")
    port = free_port()
    dump = directory / "dump"
    proc = subprocess.Popen(
        ["smtp-sink", "-u", "postfix", "-D", str(dump), "-S", r"\n==LOADMSG==\n",
         f"127.0.0.1:{port}", "1024"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for_port(port)
    return proc, port, dump


_RCPT = re.compile(r"^X-Rcpt-Args: <([^>]*)>", re.MULTILINE)


def delivered(dump: Path, tag: str) -> tuple[Counter[int], set[str]]:
    """(member post number → copies at the sink, the addresses that got any mail)."""
    try:
        text = dump.read_text(errors="replace")
    except FileNotFoundError:
        return Counter(), set()
    copies: Counter[int] = Counter()
    reached: set[str] = set()
    for message in text.split("==LOADMSG=="):
        rcpts = _RCPT.findall(message)
        reached.update(r.lower() for r in rcpts)
        found = re.search(rf"\b{tag}-member-(\d+)\b", message)
        if found:
            copies[int(found.group(1))] += sum(1 for r in rcpts if r.lower() in MEMBERS)
    return copies, reached


def backlog(lab: Lab, url: str) -> tuple[int, int]:
    """(messages in Postfix's queue, outbox rows not yet handed to Postfix)."""
    engine = make_engine(url)
    try:
        with sessionmaker_for(engine)() as s:
            outbox = s.scalar(
                select(func.count())
                .select_from(OutboxMessage)
                .where(OutboxMessage.status == OutboxStatus.queued)
            )
    finally:
        engine.dispose()
    return lab.postfix.queue_size(), int(outbox or 0)


def drain(lab: Lab, url: str, limit: float) -> tuple[tuple[int, int], float]:
    """The backlog right after the load, and the seconds until it was gone (or ``limit``)."""
    start = time.perf_counter()
    first = backlog(lab, url)
    now = first
    quiet = 0
    while time.perf_counter() - start < limit:
        if now == (0, 0):
            quiet += 1
            if quiet >= 3:  # the worker may still be queueing notices: empty three times
                break
        else:
            quiet = 0
        time.sleep(1.0)
        now = backlog(lab, url)
    return first, time.perf_counter() - start


def counted(url: str, tag: str) -> tuple[set[str], int]:
    """(senders of the held posts of this phase, bounce events of this phase)."""
    engine = make_engine(url)
    try:
        with sessionmaker_for(engine)() as s:
            held = set(
                s.scalars(select(HeldMessage.sender).where(HeldMessage.sender.like(f"nm-{tag}-%")))
            )
            events = s.scalar(
                select(func.count())
                .select_from(BounceEvent)
                .where(BounceEvent.message_id.like(f"%{tag}-bounce-%"))
            )
    finally:
        engine.dispose()
    return {h.lower() for h in held}, int(events or 0)


# --- one backend --------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def setup(url: str) -> None:
    upgrade(url)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, DOMAIN)
        mlist = lists.create(s, LIST)
        for email in MEMBERS:
            members.add(s, mlist, email)
        from mtaplugin.model.enums import MemberRole

        members.add(s, mlist, OWNER, MemberRole.owner)
        bans.add(s, mlist, BANNED)
    engine.dispose()


def run_backend(backend: str, args: argparse.Namespace) -> dict[str, object]:
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-load-", dir="/tmp"))
    os.chmod(root, 0o755)
    url, pg = bench_database(root, backend == "postgresql")
    setup(url)
    sink, sink_port, dump = start_dump_sink(root / "sink")
    dns = DnsServer().start()
    lab = Lab(
        root=root / "lab",
        database_url=url,
        name="mtaplugin-load",
        external_sink_port=sink_port,
        env={**dns.environ(), "MTAPLUGIN_DATABASE_TIMEOUT": "5"},
    )
    # The load comes from one address here, from many servers in the world: Postfix's
    # per-client limit (50 sessions at once) would answer 421 to the bench, not to them.
    lab.postfix.extra_main["smtpd_client_connection_count_limit"] = "0"
    try:
        lab.start()
        if pg is not None:
            os.environ.setdefault("PGCONNECT_TIMEOUT", "5")
        # warm up both paths (process start, caches, the list snapshot)
        asyncio.run(offer(lab.smtp_port, "warm", 20, 1, 10, args.timeout))
        asyncio.run(offer(lab.postfix.reinject_port, "warmbare", 20, 1, 10, args.timeout))
        drain(lab, url, 120)
        print(f"[{backend}] bare Postfix: {args.rate}/s for {args.duration} s", file=sys.stderr)
        bare = Phase("bare", int(args.rate * args.duration), args.duration, args.duration)
        t0 = time.perf_counter()
        bare.results = asyncio.run(
            offer(lab.postfix.reinject_port, "bare", args.rate, args.duration, args.clients,
                  args.timeout)
        )  # fmt: skip
        bare.duration = time.perf_counter() - t0
        drain(lab, url, args.drain)
        print(f"[{backend}] with the milter: {args.rate}/s for {args.duration} s", file=sys.stderr)
        load = Phase("milter", int(args.rate * args.duration), args.duration, args.duration)
        t0 = time.perf_counter()
        load.results = asyncio.run(
            offer(lab.smtp_port, "load", args.rate, args.duration, args.clients, args.timeout)
        )
        load.duration = time.perf_counter() - t0
        after, drain_s = drain(lab, url, args.drain)
        remaining = backlog(lab, url)
        copies, reached = delivered(dump, "load")
        held, events = counted(url, "load")
    finally:
        lab.stop()
        sink.terminate()
        sink.wait(10)
        dns.stop()
        if pg is not None:
            pg.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return report(backend, bare, load, after, drain_s, remaining, copies, reached, held, events)


def report(
    backend: str,
    bare: Phase,
    load: Phase,
    after: tuple[int, int],
    drain_s: float,
    remaining: tuple[int, int],
    copies: Counter[int],
    reached: set[str],
    held: set[str],
    events: int,
) -> dict[str, object]:
    results = load.offered_results
    ok: dict[str, list[Result]] = {}
    for r in results:
        if 200 <= r.code < 300:
            ok.setdefault(r.kind, []).append(r)
    expected_copies = len(ok.get("member", [])) * len(MEMBERS)
    got_copies = sum(min(copies[r.n], len(MEMBERS)) for r in ok.get("member", []))
    lost_posts = sum(1 for r in ok.get("member", []) if copies[r.n] < len(MEMBERS))
    nonmember_ok = ok.get("nonmember", [])
    lost_held = sum(1 for r in nonmember_ok if f"nm-load-{r.n}@senders.load" not in held)
    command_ok = ok.get("command", [])
    lost_replies = sum(1 for r in command_ok if f"cmd-load-{r.n}@senders.load" not in reached)
    lost_bounces = max(0, len(ok.get("bounce", [])) - events)
    answered = [r for r in results if r.code > 0]
    tempfail = [r for r in results if 400 <= r.code < 500]
    refused = [r for r in results if r.code >= 500]
    unexpected_5xx = [r for r in refused if r.kind != "banned"]
    banned_not_refused = [r for r in results if r.kind == "banned" and 200 <= r.code < 300]
    times = [r.seconds for r in answered]
    bare_results = bare.offered_results
    bare_times = [r.seconds for r in bare_results if r.code > 0]
    bare_answered = len(bare_times)
    return {
        "backend": backend,
        "due": load.offered,
        "offered": len(results),
        "not_offered_client_limit": load.offered - len(results),
        "window_s": load.window,
        "seconds_to_last_answer": round(load.duration, 1),
        "offered_per_s_achieved": round(len(results) / load.window, 1),
        "answered": len(answered),
        "answered_per_s": round(len(answered) / load.duration, 1),
        "codes": dict(load.codes()),
        "codes_by_kind": {
            kind: dict(
                Counter(
                    f"{r.code // 100}xx" if r.code else "none" for r in results if r.kind == kind
                )
            )
            for kind in MIX
        },
        "pct_4xx": round(100 * len(tempfail) / max(1, len(results)), 2),
        "unanswered": len(results) - len(answered),
        "unexpected_5xx": len(unexpected_5xx),
        "unexpected_5xx_sample": sorted({r.text for r in unexpected_5xx})[:3],
        "banned_refusal_sample": sorted({r.text for r in refused if r.kind == "banned"})[:1],
        "banned_not_refused": len(banned_not_refused),
        "tempfail_sample": sorted({r.text for r in tempfail})[:3],
        "p50_s": round(percentile(times, 0.50), 3),
        "p99_s": round(percentile(times, 0.99), 3),
        "late_p99_s": round(percentile([r.late for r in results], 0.99), 3),
        "backlog_after": {"postfix_queue": after[0], "outbox": after[1]},
        "drain_s": round(drain_s, 1),
        "backlog_left": {"postfix_queue": remaining[0], "outbox": remaining[1]},
        "copies_expected": expected_copies,
        "copies_delivered": got_copies,
        "lost": {
            "member_posts": lost_posts,
            "held_posts": lost_held,
            "command_replies": lost_replies,
            "bounce_events": lost_bounces,
        },
        "bare": {
            "due": bare.offered,
            "offered": len(bare_results),
            "offered_per_s_achieved": round(len(bare_results) / bare.window, 1),
            "seconds_to_last_answer": round(bare.duration, 1),
            "answered_per_s": round(bare_answered / bare.duration, 1),
            "codes": dict(bare.codes()),
            "p50_s": round(percentile(bare_times, 0.50), 3),
            "p99_s": round(percentile(bare_times, 0.99), 3),
        },
    }


def rows(found: dict[str, object], rate: float) -> list[dict[str, object]]:
    b = str(found["backend"])
    bare = found["bare"]
    assert isinstance(bare, dict)
    lost = found["lost"]
    assert isinstance(lost, dict)
    bare_rate = float(bare["answered_per_s"]) or float("nan")
    bare_p99 = float(bare["p99_s"]) or float("nan")
    out: list[dict[str, object]] = [
        {
            "measure": f"{b}: posts/s the clients offered (target {rate:g}/s)",
            "value": found["offered_per_s_achieved"],
            "unit": "posts/s",
            "baseline": f"to bare Postfix: {bare['offered_per_s_achieved']}/s",
            "ratio": round(
                float(str(found["offered_per_s_achieved"]))
                / (float(bare["offered_per_s_achieved"]) or float("nan")),
                3,
            ),
            "goal": f"{rate:g}/s",
            "met": float(str(found["offered_per_s_achieved"])) >= 0.99 * rate,
        },
        {
            "measure": f"{b}: answered posts/s (offered {rate:g}/s)",
            "value": found["answered_per_s"],
            "unit": "posts/s",
            "baseline": f"bare Postfix, same offered load: {bare['answered_per_s']}/s",
            "ratio": round(float(str(found["answered_per_s"])) / bare_rate, 3),
            "goal": f"{rate:g}/s offered and answered",
            "met": float(str(found["answered_per_s"])) >= 0.99 * rate,
        },
        {
            "measure": f"{b}: 4xx",
            "value": found["pct_4xx"],
            "unit": "%",
            "baseline": "",
            "ratio": None,
            "goal": f"< {GOAL_4XX:g} %",
            "met": float(str(found["pct_4xx"])) < GOAL_4XX,
        },
        {
            "measure": f"{b}: unexpected 5xx (not decided by a rule)",
            "value": found["unexpected_5xx"],
            "unit": "posts",
            "baseline": "",
            "ratio": None,
            "goal": "0",
            "met": found["unexpected_5xx"] == 0,
        },
        {
            "measure": f"{b}: p99 time to answer",
            "value": found["p99_s"],
            "unit": "s",
            "baseline": f"bare Postfix p99: {bare['p99_s']} s",
            "ratio": round(float(str(found["p99_s"])) / bare_p99, 2),
            "goal": None,
            "met": None,
        },
        {
            "measure": f"{b}: backlog drain time after the load",
            "value": found["drain_s"],
            "unit": "s",
            "baseline": "",
            "ratio": None,
            "goal": None,
            "met": None,
        },
        {
            "measure": f"{b}: lost (promised by a 250, not delivered/held/recorded)",
            "value": sum(int(v) for v in lost.values()),
            "unit": "posts",
            "baseline": "",
            "ratio": None,
            "goal": "0",
            "met": sum(int(v) for v in lost.values()) == 0,
        },
    ]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="10 s at 100 posts/s")
    parser.add_argument("--rate", type=float, default=1000.0, help="posts offered per second")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--clients", type=int, default=100, help="SMTP sessions at once at most")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per session")
    parser.add_argument(
        "--drain", type=float, default=900.0, help="seconds to wait for the backlog"
    )
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--json", metavar="PATH", help="write the rows as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the run's directory")
    args = parser.parse_args()
    if args.quick:
        args.rate, args.duration = 100.0, 10.0
    if not ready_for_mtas("bench/load.py starts a private Postfix", ("smtp-sink", "postfix")):
        return 1
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    load_before = machine_load()
    found = [run_backend(b, args) for b in backends]
    all_rows = [row for f in found for row in rows(f, args.rate)]
    print(
        f"load: {args.rate:g} posts/s offered for {args.duration:g} s, at most {args.clients} "
        f"sessions; mix {', '.join(f'{k} {v} %' for k, v in MIX.items())}; {started}; "
        f"load average before {load_before}, after {machine_load()}"
    )
    for f in found:
        print(json.dumps(f, indent=1))
    for row in all_rows:
        ratio = "" if row["ratio"] is None else f"  ratio {row['ratio']}"
        met = "" if row["met"] is None else ("  goal met" if row["met"] else "  goal NOT met")
        print(f"  {row['measure']}: {row['value']} {row['unit']}{ratio}{met}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"bench": NAME, "rows": all_rows, "runs": found}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
