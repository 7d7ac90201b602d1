"""Every side-by-side comparison in one run, and one table of ratios (``make bench-all``).

Runs each bench below in turn with ``--json`` (and ``--quick`` when given), shows its own
output as it goes (also kept in ``--log``), then prints two tables: first the rows of
issue 34's goals (in the default configuration: SQLite, the built-in archive on), then
every row.  Each figure is the median of interleaved rounds (the baseline and mtaplugin
take turns round by round in one run) with the lowest and the highest round in brackets;
a ratio is the median of the per-round ratios, with theirs.  ``--markdown`` prints the
tables in Markdown (the README's table is that output): the goals, then the rows that
have a goal and the floors' ratios (``floor: ...`` rows: what a no-op pymilter doing the
same edits, or also the required work -- the journal before the 250 and the archive --
reaches against the same baseline).  A bench that fails is a row
saying so; the exit status is then 1.  Each bench's JSON report is kept in ``--reports``
(var/bench-all/): ``--render`` prints the tables again from them without running anything.

    .venv/bin/python bench/all.py [--quick] [--only NAME ...] [--markdown] [--mailman]
    .venv/bin/python bench/all.py --render --markdown

30 minutes to an hour on a 2-core machine (``--quick``: a smoke test of every bench,
about 10 minutes, figures not to be quoted).  The comparisons that need GNU Mailman 3 or OpenDKIM
install them into throw-away places under the package cache (never into the system or
mtaplugin's virtualenv); ``--mailman`` adds GNU Mailman's list runners to vs-mailman
(another 30 minutes or more: Mailman on its defaults handles about 0.1 posts/s here).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mtaplugin.testing.benchdb import machine_load
from mtaplugin.testing.benchreport import GOALS, Spread, number

HERE = Path(__file__).resolve().parent


@dataclass
class Bench:
    name: str
    script: str
    args: list[str] = field(default_factory=list)
    #: more arguments with ``--mailman``
    mailman: list[str] = field(default_factory=list)


#: the order runs the goals of issue 34 first
BENCHES: list[Bench] = [
    Bench("postfix-overhead", "postfix_overhead.py", ["--backend", "both"]),
    Bench("vs-opendkim", "vs_opendkim.py"),
    Bench("load", "load.py", ["--backend", "both"]),
    Bench("milter-ceiling", "milter_ceiling.py"),
    Bench(
        "vs-mailman",
        "vs_mailman.py",
        ["--systems", "limit,mtaplugin,postfix-rcpt", "--posts", "20", "--big-posts", "5"],
        [
            "--systems",
            "limit,mtaplugin,postfix-rcpt,mailman-default,mailman-tuned",
            "--rounds",
            "3",
        ],
    ),
    Bench("big-list", "big_list_decide.py", ["--postgres"]),
    Bench("web-members", "web_members.py", ["--postgres"]),
    Bench("rest-vs-mailman", "rest.py", ["--mailman-venv", "--members", "10000"]),
    Bench("two-hosts", "two_hosts.py", ["--posts", "200"]),
]
HEADERS = ["bench", "measure", "mtaplugin", "baseline", "ratio", "rounds", "goal", "met"]


def machine() -> str:
    cpus = os.cpu_count() or 0
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{platform.node()}: {cpus} CPUs {model}{mem}, {platform.platform()}"


def spread(row: dict[str, object], key: str) -> str:
    """A row's value or ratio as ``median [lowest-highest]`` when it has its rounds'
    spread, else as a plain figure."""
    value = row.get(key)
    low = row.get("ratio_low" if key == "ratio" else "low")
    high = row.get("ratio_high" if key == "ratio" else "high")
    if not isinstance(value, int | float):
        return ""
    rounds = row.get("rounds")
    if isinstance(low, int | float) and isinstance(high, int | float):
        n = rounds if isinstance(rounds, int) else 2
        return Spread(float(value), float(low), float(high), n).text()
    return number(float(value))


def cells(bench: str, row: dict[str, object]) -> dict[str, str]:
    met = row.get("met")
    value = spread(row, "value")
    return {
        "bench": bench,
        "measure": str(row.get("measure", "?")),
        "mtaplugin": f"{value} {row.get('unit', '')}".strip() if value else "",
        "baseline": str(row.get("baseline") or ""),
        "ratio": spread(row, "ratio"),
        "rounds": str(row.get("rounds") or ""),
        "goal": str(row.get("goal") or ""),
        "met": "" if met is None else "yes" if met else "NO",
    }


def table(headers: list[str], rows: list[dict[str, str]], markdown: bool) -> str:
    lines = [[r.get(h, "") for h in headers] for r in rows]
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(c.replace("|", "/") for c in line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    return "\n".join(out)


def producer(key: str) -> str:
    """The bench that measures the goal ``key``."""
    if key.startswith(("non-list", "list-")):
        return "postfix-overhead"
    return "vs-opendkim" if key.startswith("signed") else "load"


def goal_rows(found: dict[str, dict[str, str]], failed: set[str]) -> list[dict[str, str]]:
    """One line per goal of issue 34, in ``GOALS``' order ("not measured" when missing)."""
    out = []
    for key, what in GOALS.items():
        row = found.get(key)
        if row is None:
            bench = producer(key)
            row = {
                "measure": f"not measured: {bench} failed"
                if bench in failed
                else "not measured in this run"
            }
        out.append({**row, "goal of issue 34": what})
    return out


def run(bench: Bench, args: argparse.Namespace, out: Path, log: TextIO) -> tuple[int, float]:
    """Run one bench, its output shown and logged; (exit status, seconds)."""
    extra = bench.mailman if args.mailman and bench.mailman else bench.args
    command = [sys.executable, str(HERE / bench.script), *extra, "--json", str(out)]
    if args.quick:
        command.append("--quick")
    log.write(f"\n===== {bench.name}: {' '.join(command)}\n")
    log.flush()
    t0 = time.monotonic()
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stderr.write(f"  {line}")
            sys.stderr.flush()
            log.write(line)
    return proc.returncode, time.monotonic() - t0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small runs (a smoke test)")
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help=f"some of: {', '.join(b.name for b in BENCHES)}"
    )
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--mailman", action="store_true", help="vs-mailman with GNU Mailman too")
    parser.add_argument("--log", type=Path, default=Path("var/bench-all.log"))
    parser.add_argument(
        "--reports",
        type=Path,
        default=Path("var/bench-all"),
        help="where each bench's JSON report is kept (var/bench-all)",
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="run nothing: print the tables of the reports kept by the last run",
    )
    args = parser.parse_args()
    chosen = [b for b in BENCHES if not args.only or b.name in args.only]
    unknown = set(args.only or ()) - {b.name for b in BENCHES}
    if unknown:
        parser.error(f"--only: unknown bench {', '.join(sorted(unknown))}")
    if args.render:
        kept = [(b.name, args.reports / f"{b.name}.json") for b in chosen]
        run_file = args.reports / "run.json"
        if run_file.exists():
            print(f"{json.loads(run_file.read_text())['header']}\n")
        print(
            render([(n, json.loads(p.read_text())) for n, p in kept if p.exists()], args.markdown)
        )
        return 0
    args.log.parent.mkdir(parents=True, exist_ok=True)
    args.reports.mkdir(parents=True, exist_ok=True)
    results: list[tuple[str, dict[str, Any] | None]] = []
    started, load_before = time.monotonic(), machine_load()
    with args.log.open("w") as log:
        for n, bench in enumerate(chosen, 1):
            print(
                f"[{n}/{len(chosen)}] {bench.name} ({time.strftime('%H:%M:%S')}, "
                f"{(time.monotonic() - started) / 60:.0f} min so far, load {machine_load()})",
                file=sys.stderr,
                flush=True,
            )
            out = args.reports / f"{bench.name}.json"
            out.unlink(missing_ok=True)
            status, took = run(bench, args, out, log)
            if status != 0 or not out.exists():
                results.append((bench.name, {"failed": status}))
                continue
            data = json.loads(out.read_text())
            print(f"  ({took / 60:.1f} min, load {data.get('load', '?')})", file=sys.stderr)
            results.append((bench.name, data))
    quick = " --quick (a smoke test: not figures to quote)" if args.quick else ""
    header = (
        f"mtaplugin bench-all{quick}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{machine()}, {(time.monotonic() - started) / 60:.0f} min, load average "
        f"{load_before} before, {machine_load()} after"
    )
    (args.reports / "run.json").write_text(json.dumps({"header": header}) + "\n")
    print(f"\n{header}\n")
    print(render(results, args.markdown))
    return 1 if any("failed" in (data or {}) for _n, data in results) else 0


def render(results: list[tuple[str, dict[str, Any] | None]], markdown: bool) -> str:
    """The two tables of the benches' JSON reports (``{"failed": status}`` for a bench that
    failed): issue 34's goals, then every row."""
    rows: list[dict[str, str]] = []
    goals: dict[str, dict[str, str]] = {}
    failed: set[str] = set()
    for name, data in results:
        if data is None or "failed" in data:
            failed.add(name)
            status = None if data is None else data["failed"]
            rows.append({"bench": name, "measure": f"FAILED (exit {status})"})
            continue
        for r in data["rows"]:
            line = cells(name, r)
            rows.append(line)
            if r.get("key"):
                goals[str(r["key"])] = line
    legend = (
        "Each figure is the median of the rounds [lowest-highest]; the baseline and mtaplugin "
        "took turns round by round in one run, and a ratio is the median of the per-round "
        "ratios [lowest-highest]. A goal is judged on the median."
    )
    return "\n".join(
        [
            legend,
            "",
            "Issue 34's goals (default configuration: SQLite, the built-in archive on):",
            "",
            table(["goal of issue 34", *HEADERS[1:]], goal_rows(goals, failed), markdown),
            "",
            "Every row with a goal, and the floors' ratios (the full table: without --markdown):"
            if markdown
            else "Every row:",
            "",
            table(
                HEADERS,
                [
                    r
                    for r in rows
                    if r.get("goal")
                    or not markdown
                    or r["measure"].startswith("FAILED")
                    or (r["measure"].startswith("floor:") and r.get("ratio"))
                ],
                markdown,
            ),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
