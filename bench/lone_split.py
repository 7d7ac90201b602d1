"""Where a lone signed post's time goes (issue 34, goal (c)): the SMTP client's steps, one
post alone in its session, from the connect to the copy at a timestamping sink, for bare
Postfix, the no-op pymilter that seals and signs the decorated copy
(``noop_milter --decorate --sign``) and mtaplugin (``serve``, a 1-member decorated list,
the archive on, the copy ARC-sealed and DKIM-signed), taking turns post by post.

The steps: the banner (Postfix's smtpd connects to the milter first), EHLO + MAIL, RCPT
(mtaplugin's: Postfix's relay-domain lookup in mtaplugin's lookup server, then the
milter's RCPT callback), DATA to the 250 (the milter's DATA and end-of-message callbacks:
the decision, the signatures, the database commit and its flush, the edits; then
Postfix's cleanup), QUIT, and the 250 to the copy at the sink (Postfix's queue manager
and delivery).  ``--strace FILE``: also trace mtaplugin's processes (``strace -f -ttt
-T``) during its posts (only those), and print the milter's own split of its end of
message, read from the trace: until the database is first read, the decision and the
signatures until the commit's first write, the flush of the log, the reply's edits.

``--gap S``: the pause between two posts (0.25 s); above 30 s each post comes after a
quiet spell, as a lone post on a real list does (the list domain's key is read again: its
key cache keeps it 30 s).

    .venv/bin/python bench/lone_split.py [--posts 20] [--gap 0.25] [--strace FILE] [--before 5000]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import smtplib
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from vs_opendkim import wait_drained

from mtaplugin.testing.benchlatency import Events, LatencySink, message
from mtaplugin.testing.milterbench import (
    LIST,
    LONE_LIST,
    LONE_MEMBER,
    OtherMilter,
    Path_,
    bare_port,
    bench_root,
    lab_pid,
    make_database,
    mtaplugin_lab,
    noop_milter,
)

STEPS = ("banner", "EHLO+MAIL", "RCPT", "DATA->250", "QUIT", "250->sink", "total")


def post(events: Events, port: int, rcpt: str, tag: str) -> list[float]:
    """One post alone in its session: the seconds of each of ``STEPS``."""
    data = message(LONE_MEMBER, rcpt, tag)
    t0 = time.time()
    smtp = smtplib.SMTP("127.0.0.1", port, timeout=60)
    t1 = time.time()
    smtp.ehlo()
    smtp.mail(LONE_MEMBER)
    t2 = time.time()
    smtp.rcpt(rcpt)
    t3 = time.time()
    smtp.data(data)
    t4 = time.time()
    smtp.quit()
    t5 = time.time()
    events.wait([tag], 1, 60)
    sink = events.first[tag]
    return [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, sink - t4, sink - t0]


_LINE = re.compile(r"^(\d+) (\d+\.\d+) (.*)$")
_EOM = re.compile(r'^read\(\d+, "\\0\\0\\0\\1E", 5\)')
EOM_STEPS = {
    "end of message -> first database read": ("E", "db"),
    "-> the commit's first write (decision, signatures)": ("db", "write"),
    "-> the flush of the log (fsync) starts": ("write", "sync"),
    "the flush (fsync)": ("sync", "synced"),
    "-> the first edit sent back": ("synced", "out"),
    "the edits and the reply": ("out", "last"),
    "end of message -> the reply sent": ("E", "last"),
    "of which asleep (SQLite's busy wait for the write lock)": ("slept", ""),
}


def eom_split(trace: Path) -> dict[str, list[float]]:
    """Each end of message in the milter's worker thread: the seconds of ``EOM_STEPS``."""
    events = [(m[1], float(m[2]), m[3]) for m in map(_LINE.match, trace.open()) if m]
    out: dict[str, list[float]] = {name: [] for name in EOM_STEPS}
    for i, (tid, t, call) in enumerate(events):
        if not _EOM.match(call):
            continue
        at = {"E": t, "slept": 0.0}
        for tid2, t2, call2 in events[i + 1 :]:
            if tid2 != tid:
                continue
            if call2.startswith(("pread64", "pwrite64")):
                at.setdefault("db", t2)
            if call2.startswith("pwrite64"):
                at.setdefault("write", t2)
            if call2.startswith(("fsync", "fdatasync")):
                took = re.search(r"<([\d.]+)>", call2)
                at["sync"], at["synced"] = t2, t2 + float(took[1] if took else 0)
            if "sleep(" in call2:
                took = re.search(r"<([\d.]+)>", call2)
                at["slept"] += float(took[1] if took else 0)
            if "POLLOUT" in call2:
                at.setdefault("out", t2)
                at["last"] = t2
            if "events=POLLIN}], 1, 1)" in call2:  # libmilter waits for the next command
                break
        if all(k in at for k in ("db", "write", "sync", "out")):
            for name, (a, b) in EOM_STEPS.items():
                out[name].append(at[b] - at[a] if b else at[a])
    return out


def tree(pid: int) -> list[str]:
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [str(pid), *children.stdout.split()]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--posts", type=int, default=20, help="per path")
    parser.add_argument("--gap", type=float, default=0.25, help="seconds between posts")
    parser.add_argument("--strace", type=Path, help="trace mtaplugin's processes into FILE")
    parser.add_argument(
        "--before",
        type=int,
        default=0,
        help="first send this many posts to mtaplugin's list and wait until its worker "
        "archived them (as bench/vs_opendkim.py's lone posts come after its rounds)",
    )
    args = parser.parse_args()
    with bench_root("mtaplugin-split-") as (root, sink_port), LatencySink(root / "lat") as lat:
        (root / "signed").mkdir()
        url = f"sqlite:///{root / 'signed' / 'bench.db'}"
        pem = make_database(url, dkim="rsa")
        assert pem is not None
        key = root / "key.pem"
        key.write_text(pem)
        (root / "noop-db").mkdir()
        noop_url = f"sqlite:///{root / 'noop-db' / 'bench.db'}"
        make_database(noop_url)
        with contextlib.ExitStack() as stack:
            lab = stack.enter_context(
                mtaplugin_lab(root / "signed", url, sink_port, latency_transport=lat.transport)
            )
            signer = ("--sign", str(key), "--lone-to", LONE_MEMBER)
            sock, _pid = stack.enter_context(noop_milter(root / "noop", "same", True, *signer))
            other = OtherMilter(root / "p-noop", noop_url, sink_port, "bench-noop", sock)
            other.postfix.extra_main["transport_maps"] = lat.transport
            other.postfix.start()
            stack.callback(other.postfix.stop)
            paths = [
                ("bare Postfix", bare_port(lab), LONE_MEMBER),
                ("no-op pymilter, sealed + signed", other.postfix.smtp_port, LONE_LIST),
                ("mtaplugin, sealed + signed", lab.smtp_port, LONE_LIST),
            ]
            if args.before:
                Path_("bulk", lab.postfix, lab.smtp_port, LIST).run(args.before, 4, 2000)
                wait_drained({"signed": url})
            for name, port, rcpt in paths:  # warm-up
                for i in range(3):
                    post(lat.events, port, rcpt, f"warm{len(name)}-{i}")
                    time.sleep(0.2)
            tracer = None
            if args.strace:
                pid = lab_pid(lab)
                assert pid is not None
                pids = [a for p in tree(pid) for a in ("-p", p)]
                calls = "trace=read,write,pread64,pwrite64,fsync,fdatasync,poll,%clock,nanosleep"
                tracer = subprocess.Popen(
                    ["strace", "-f", "-ttt", "-T", "-o", str(args.strace), "-e", calls, *pids]
                )
                time.sleep(2)
            found: dict[str, list[list[float]]] = {name: [] for name, *_ in paths}
            for r in range(args.posts):
                for name, port, rcpt in paths if r % 2 == 0 else paths[::-1]:
                    if tracer is None or port == lab.smtp_port:
                        found[name].append(post(lat.events, port, rcpt, f"split{r}-{port}"))
                    time.sleep(args.gap)
            if tracer is not None:
                time.sleep(1)
                tracer.terminate()
                tracer.wait(30)
    print(
        f"lone_split: {args.posts} posts per path, {args.gap} s apart "
        f"({args.before} posts to the list before), "
        f"medians in ms, load {os.getloadavg()}"
    )
    print(f"  {'path':34s}" + "".join(f"{s:>11s}" for s in STEPS))
    for name, rows in found.items():
        if rows:
            medians = [statistics.median(column) * 1000 for column in zip(*rows, strict=True)]
            print(f"  {name:34s}" + "".join(f"{v:11.2f}" for v in medians))
    if args.strace:
        print("  mtaplugin's milter, end of message (under strace), ms: median [lowest-highest]")
        for name, values in eom_split(args.strace).items():
            if values:
                ms = [v * 1000 for v in values]
                print(f"    {name:52s} {statistics.median(ms):6.2f} [{min(ms):.2f}-{max(ms):.2f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
