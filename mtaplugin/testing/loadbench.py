"""The parts of bench/load.py: the posts of the offered mix, the SMTP clients that offer
them at a fixed rate (open loop), the sink that keeps every delivery, and the counts that
tell what a 250 promised and what arrived.

The mix:

  * 60 % member posts to a list of 5 members: 250, then one copy for each member at the sink;
  * 15 % nonmember posts: 250 and held (a held row in the database);
  * 5 % posts from a banned address: 5xx naming the rule;
  * 10 % email commands (``help`` to ``-request``): 250 and a reply at the sink;
  * 10 % bounces (a DSN from ``<>`` to ``-bounces``): 250 and a bounce event recorded.

Every post carries its phase's tag (``TAG-KIND-N`` in its Subject and Message-ID, or its
sender), so that the rounds of one run are counted apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import func, select

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.enums import MemberRole, OutboxStatus
from mtaplugin.manage import bans, domains, lists, members
from mtaplugin.model import BounceEvent, HeldMessage, OutboxMessage
from mtaplugin.testing import free_port, wait_for_port
from mtaplugin.testing.lab import Lab

DOMAIN = "lists.load"
LIST = f"team@{DOMAIN}"
MEMBERS = tuple(f"m{i}@members.load" for i in range(1, 6))
BANNED = "banned@senders.load"
OWNER = "owner@owners.load"
#: kind → share of the offered posts
MIX = {"member": 60, "nonmember": 15, "banned": 5, "command": 10, "bounce": 10}
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
    #: seconds from the phase's start to the answer
    at: float = 0.0


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
            now = time.perf_counter()
            results.append(Result(kind, n, code, text, now - began, began - due, now - start))

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


_RCPT = re.compile(rb"^X-Rcpt-Args: <([^>]*)>", re.MULTILINE)


_MEMBER_POST = re.compile(rb"\b([a-z0-9]+)-member-(\d+)\b")


def delivered(dump: Path) -> tuple[Counter[tuple[str, int]], set[str]]:
    """((phase tag, member post number) → copies at the sink, the addresses that got any
    mail)."""
    try:
        text = dump.read_bytes()
    except FileNotFoundError:
        return Counter(), set()
    members = {m.encode() for m in MEMBERS}
    copies: Counter[tuple[str, int]] = Counter()
    reached: set[str] = set()
    for message in text.split(b"==LOADMSG=="):
        rcpts = [r.lower() for r in _RCPT.findall(message)]
        reached.update(r.decode(errors="replace") for r in rcpts)
        found = _MEMBER_POST.search(message)
        if found:
            key = (found.group(1).decode(), int(found.group(2)))
            copies[key] += sum(1 for r in rcpts if r in members)
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
        members.add(s, mlist, OWNER, MemberRole.owner)
        bans.add(s, mlist, BANNED)
    engine.dispose()


def run_phase(
    port: int, tag: str, rate: float, duration: float, clients: int, timeout: float
) -> Phase:
    """Offer ``rate`` posts/s for ``duration`` s to ``port``; the phase with its answers."""
    phase = Phase(tag, int(rate * duration), duration, duration)
    t0 = time.perf_counter()
    phase.results = asyncio.run(offer(port, tag, rate, duration, clients, timeout))
    phase.duration = time.perf_counter() - t0
    return phase


def answered_per_s(phase: Phase) -> float:
    """Posts answered (any code) per second, from the phase's start to its last answer (a
    session that got no answer and timed out does not stretch the time: it counts in
    ``share_tempfail``)."""
    answered = [r for r in phase.offered_results if r.code > 0]
    last = max((r.at for r in answered), default=0.0)
    return len(answered) / last if last else 0.0


def share_tempfail(phase: Phase) -> float:
    """Percent of the offered posts answered 4xx or not at all (both are tried again by
    the sender)."""
    results = phase.offered_results
    failed = sum(1 for r in results if r.code == 0 or 400 <= r.code < 500)
    return 100 * failed / max(1, len(results))


def lost(
    phase: Phase, copies: Counter[tuple[str, int]], reached: set[str], url: str
) -> dict[str, int]:
    """What a 250 of ``phase`` promised and is not there: a member post without its copies,
    a held post without its held row, a command without its reply, a DSN without its
    bounce event."""
    tag = phase.name
    ok: dict[str, list[Result]] = {}
    for r in phase.offered_results:
        if 200 <= r.code < 300:
            ok.setdefault(r.kind, []).append(r)
    held, events = counted(url, tag)
    return {
        "member_posts": sum(1 for r in ok.get("member", []) if copies[(tag, r.n)] < len(MEMBERS)),
        "held_posts": sum(
            1 for r in ok.get("nonmember", []) if f"nm-{tag}-{r.n}@senders.load" not in held
        ),
        "command_replies": sum(
            1 for r in ok.get("command", []) if f"cmd-{tag}-{r.n}@senders.load" not in reached
        ),
        "bounce_events": max(0, len(ok.get("bounce", [])) - events),
    }
