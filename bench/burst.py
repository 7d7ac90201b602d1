"""Posts in bursts for bench/vs_mailman.py: the bench's private Postfix with its extra
listeners, the post, the SMTP clients that send it (pipelined, as Postfix's own client
does) and note when each transaction began and when it was answered, and the ``Runner``
that measures one system's round (lone posts, a burst, its memory) at the counting sink."""

from __future__ import annotations

import argparse
import os
import smtplib
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mtaplugin.mailauth import signing
from mtaplugin.testing import benchlimit
from mtaplugin.testing.benchdb import tree_memory
from mtaplugin.testing.benchlatency import Events
from mtaplugin.testing.postfix import PrivatePostfix

#: what the limit's signed post says it was checked for (the bench signs it itself)
RESULTS = "lists.bench; dkim=pass header.d=d0.example; spf=pass smtp.mailfrom=d0.example"


@dataclass
class BenchPostfix(PrivatePostfix):
    """The lab's Postfix with four more listeners: Mailman's incoming (no milter, the list
    domain routed to Mailman's LMTP by its own transport map), the outgoing listener that
    Mailman submits to (OpenDKIM when ``vsm_out_milters`` names it), the limit's (never a
    milter: bare Postfix fanning the post out, its cleanup expanding ``limit_aliases``,
    ``mtaplugin.testing.benchlimit``) and ``rcpt_port``, the same without the expansion
    (the members sent as ``RCPT TO`` commands, for context)."""

    mailman_in_port: int = 0
    out_port: int = 0
    limit_port: int = 0
    rcpt_port: int = 0
    #: the limit's list addresses and their members
    limit_aliases: dict[str, list[str]] = field(default_factory=dict)
    #: replaces the lab's relay_domains (a parameter set twice in main.cf makes every
    #: Postfix process warn, and postlogd deadlocks logging its own warning)
    relay_domains: str = ""

    def write_config(self) -> None:
        super().write_config()
        main = self.conf / "main.cf"
        lines = main.read_text().splitlines(keepends=True)
        main.write_text(
            "".join(
                f"relay_domains = {self.relay_domains}\n"
                if line.startswith("relay_domains =") and self.relay_domains
                else line
                for line in lines
            )
        )
        submission = """
  -o mynetworks=127.0.0.0/8
  -o smtpd_relay_restrictions=permit_mynetworks,reject
  -o smtpd_recipient_restrictions=permit_mynetworks,reject
  -o smtpd_recipient_limit=20000"""
        with open(self.conf / "master.cf", "a") as f:
            f.write(
                f"""
# --- vs_mailman: Mailman's incoming listener (its lists go to its LMTP server) ---
127.0.0.1:{self.mailman_in_port} inet n - n - - smtpd
  -o syslog_name={self.name}/mailman-in
  -o smtpd_milters=
# --- vs_mailman: Mailman's outgoing listener (its copies) ---
127.0.0.1:{self.out_port} inet n - n - - smtpd
  -o syslog_name={self.name}/out
  -o smtpd_milters=$vsm_out_milters{submission}
# --- vs_mailman: the members as RCPT TO commands (no milter, no expansion) ---
127.0.0.1:{self.rcpt_port} inet n - n - - smtpd
  -o syslog_name={self.name}/rcpt
  -o smtpd_milters={submission}
lmtp      unix  -       -       n       -       -       lmtp
"""
            )
            largest = max((len(m) for m in self.limit_aliases.values()), default=0)
            lookup = benchlimit.write_table(self.conf, self.limit_aliases)
            f.write(benchlimit.master_cf(self.name, self.limit_port, lookup, largest, submission))

    def set_out_milters(self, milters: str) -> None:
        subprocess.run(
            ["postconf", "-c", str(self.conf), "-e", f"vsm_out_milters={milters}"], check=True
        )
        subprocess.run(
            ["postfix", "-c", str(self.conf), "reload"], check=True, capture_output=True, timeout=60
        )
        time.sleep(1.5)  # the listeners' processes restart with the new setting


def message(poster: str, list_address: str, tag: str) -> bytes:
    return (
        f"From: Poster <{poster}>\r\nTo: {list_address}\r\nSubject: bench post {tag}\r\n"
        f"Message-ID: <vsm-{tag}@{poster.rpartition('@')[2]}>\r\n"
        f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}\r\n"
        "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n"
        + "A line of a typical short post, about the list's subject.\r\n"
        * 30
    ).encode()


@dataclass
class Target:
    """Where a post goes: port, envelope recipients, the To: of the message, and the key
    the bench signs it with before it sends it (the signed limit: the post as it leaves
    a signing list manager, fanned out by bare Postfix)."""

    port: int
    recipients: list[str]
    to: str
    poster: str
    sign: signing.SigningKey | None = None


def submit(smtp: smtplib.SMTP, target: Target, tag: str) -> tuple[float, float]:
    """One transaction, pipelined as Postfix's own client does (MAIL, every RCPT and DATA
    in one write): the limit's 1 000 recipients cost no round trip each.  Returns (the
    time the transaction began, the time of its 250)."""
    raw = message(target.poster, target.to, tag)
    if target.sign is not None:
        raw = signing.seal_and_sign(raw, target.sign, target.sign.domain, RESULTS)
    start = time.time()
    if smtp.ehlo_resp is None:
        smtp.ehlo("poster.d0.example")
    commands = [f"MAIL FROM:<{target.poster}>"] + [f"RCPT TO:<{r}>" for r in target.recipients]
    smtp.send(("\r\n".join([*commands, "DATA"]) + "\r\n").encode())
    for command in [*commands, "DATA"]:
        code, text = smtp.getreply()
        if code >= 400:
            raise RuntimeError(f"{command}: {code} {text.decode(errors='replace')}")
    smtp.send(raw.replace(b"\r\n.", b"\r\n..") + b"\r\n.\r\n")
    code, text = smtp.getreply()
    if code != 250:
        raise RuntimeError(f"end of data: {code} {text.decode(errors='replace')}")
    return start, time.time()


def lone(target: Target, tag: str) -> float:
    """Send one post in a session of its own; the time the client connected."""
    start = time.time()
    with smtplib.SMTP("127.0.0.1", target.port, timeout=600) as smtp:
        submit(smtp, target, tag)
    return start


def post_burst(target: Target, tags: Sequence[str], clients: int) -> dict[str, tuple[float, float]]:
    """Send the posts over ``clients`` SMTP sessions at once; each post's (start, 250)."""
    done: dict[str, tuple[float, float]] = {}
    queue = list(tags)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with smtplib.SMTP("127.0.0.1", target.port, timeout=600) as smtp:
                while True:
                    with lock:
                        if not queue:
                            return
                        tag = queue.pop(0)
                    t = submit(smtp, target, tag)
                    with lock:
                        done[tag] = t
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(min(clients, len(tags)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return done


@dataclass
class Round:
    """One system's figures in one round."""

    posts_per_s: float
    copies_per_s: float
    lone_latency: float
    burst_latency: float
    rss_kib: int = 0
    pss_kib: int = 0


class Runner:
    def __init__(self, events: Events, args: argparse.Namespace) -> None:
        self.events = events
        self.args = args
        self.run_id = f"r{os.getpid()}"
        self.n = 0
        self.copies: dict[int, int] = {}

    def tag(self) -> str:
        self.n += 1
        return f"{self.run_id}-{self.n}"

    def warm(self, target: Target, timeout: float) -> int:
        """One post, until its copies stop coming: how many copies a post makes."""
        tag = self.tag()
        lone(target, tag)
        self.copies[id(target)] = self.events.settle(tag, timeout)
        return self.copies[id(target)]

    def measure(self, target: Target, tree: Callable[[], list[int]], timeout: float) -> Round:
        args, copies = self.args, self.copies[id(target)]
        latencies = []
        for _ in range(args.lone):
            tag = self.tag()
            start = lone(target, tag)
            self.events.wait([tag], copies, timeout)
            latencies.append(self.events.first[tag] - start)
        tags = [self.tag() for _ in range(args.posts)]
        began = time.time()
        times = post_burst(target, tags, args.clients)
        last = self.events.wait(tags, copies, timeout * max(1, args.posts / 5))
        seconds = last - began
        rss, pss = tree_memory(tree())
        return Round(
            posts_per_s=len(tags) / seconds,
            copies_per_s=len(tags) * copies / seconds,
            lone_latency=statistics.median(latencies),
            burst_latency=statistics.median(self.events.first[t] - times[t][0] for t in tags),
            rss_kib=rss,
            pss_kib=pss,
        )

    def big(self, target: Target) -> float:
        """``--big-posts`` posts to the big list: seconds until the last copy."""
        copies = self.copies[id(target)]
        tags = [self.tag() for _ in range(self.args.big_posts)]
        began = time.time()
        post_burst(target, tags, self.args.clients)
        return self.events.wait(tags, copies, 3600) - began
