"""Postfix's CPU per post, process by process, for a post to a 1 000-member list: the
limit (one ``RCPT TO`` of a list address that the limit listener's cleanup expands through
``virtual_alias_maps``, ``mtaplugin.testing.benchlimit``), the old limit (the members as
1 000 ``RCPT TO`` commands in one transaction, vs-mailman's ``postfix-rcpt``) and
mtaplugin (``serve``, the list expanded in place by the milter), on one private Postfix
delivering to ``smtp-sink``.

Each round sends a burst of ``--posts`` posts over 4 sessions on each path in turn
(alternating order), waits for every copy, and sums the CPU time (user + system, read
from /proc every 50 ms) of each process of that Postfix by its name (smtpd, cleanup,
trivial-rewrite, qmgr, smtp, ...) and of mtaplugin's process tree.

    .venv/bin/python bench/postfix_cpu.py [--posts 20] [--rounds 2] [--members 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mtaplugin.testing.benchdb import tree_cpu_seconds
from mtaplugin.testing.benchreport import interleaved
from mtaplugin.testing.milterbench import (
    FANOUT,
    LIST,
    MEMBER,
    Path_,
    bare_port,
    bench_root,
    lab_pid,
    limit_port,
    make_database,
    members_of,
    mtaplugin_lab,
)

TICK = os.sysconf("SC_CLK_TCK")


class Sampler:
    """The CPU seconds of each child of a Postfix master, by process name, as it grows."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.seen: dict[int, tuple[str, float]] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _children(self) -> dict[int, tuple[str, float]]:
        out = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) == self.master:
                out[int(entry)] = (name, (int(fields[11]) + int(fields[12])) / TICK)
        return out

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            found = self._children()
            with self.lock:
                self.seen.update(found)

    def by_name(self) -> dict[str, float]:
        with self.lock:
            out: dict[str, float] = {}
            for name, seconds in self.seen.values():
                out[name] = out.get(name, 0.0) + seconds
            return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--posts", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--members", type=int, default=1000)
    args = parser.parse_args()
    members = members_of(args.members)
    with bench_root("mtaplugin-postfixcpu-") as (root, sink_port):
        url = f"sqlite:///{root / 'bench.db'}"
        make_database(url, n_members=args.members)
        with mtaplugin_lab(root, url, sink_port, limit_aliases={FANOUT: members}) as lab:
            pid = lab_pid(lab)
            n = args.members
            paths = [
                Path_("the limit (cleanup expands)", lab.postfix, limit_port(lab), FANOUT,
                      copies=n),
                Path_("the old limit (1 000 RCPT TO)", lab.postfix, bare_port(lab), MEMBER,
                      recipients=n, copies=n),
                Path_("mtaplugin (in place)", lab.postfix, lab.smtp_port, LIST, pid, copies=n),
            ]  # fmt: skip
            master = int((lab.postfix.root / "queue" / "pid" / "master.pid").read_text())
            sampler = Sampler(master)
            for p in paths:
                p.run(3, 1, 2000)
            found: dict[str, list[dict[str, float]]] = {p.name: [] for p in paths}
            for r, p in interleaved(args.rounds, paths):
                time.sleep(1.0)
                before, cpu = sampler.by_name(), tree_cpu_seconds(p.cpu_pid)
                p.run(args.posts, 4, 2000)
                time.sleep(0.2)
                after = sampler.by_name()
                ms = {k: (after[k] - before.get(k, 0.0)) * 1000 / args.posts for k in after}
                if p.cpu_pid is not None:
                    ms["mtaplugin (serve)"] = (
                        (tree_cpu_seconds(p.cpu_pid) - cpu) * 1000 / args.posts
                    )
                found[p.name].append(ms)
                print(f"round {r + 1} {p.name}: {p.delivered[-1]:.2f} posts/s", file=sys.stderr)
            sampler.stop.set()
    names = sorted({k for rows in found.values() for row in rows for k in row})
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Postfix CPU ms per post, {args.members} members, {args.posts} posts x "
          f"{args.rounds} rounds, load {load}; lowest-highest of the rounds")  # fmt: skip
    print(f"  {'process':20s}" + "".join(f"{p.name:>34s}" for p in paths))
    for name in names:
        cells = []
        for p in paths:
            values = [row.get(name, 0.0) for row in found[p.name]]
            cells.append(f"{min(values):.1f}-{max(values):.1f}")
        print(f"  {name:20s}" + "".join(f"{c:>34s}" for c in cells))
    for p in paths:
        print(f"  {p.name}: {statistics.median(p.delivered):.2f} posts/s (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
