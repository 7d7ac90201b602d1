"""Every side-by-side comparison in one run, and one table of ratios (``make bench-all``).

Runs each bench below in turn with ``--json`` (and ``--quick`` when given), shows its own
output as it goes (also kept in ``--log``), then prints one table: what was measured, the
value, the baseline measured in the same run, the ratio, the goal and whether it was met.
``--markdown PATH`` writes the rows that have a goal (and the failures) as a Markdown
table, for the README.  A bench that fails is a row saying
so; the exit status is then 1.

    .venv/bin/python bench/all.py [--quick] [--only NAME ...] [--markdown PATH]

The comparisons that need GNU Mailman 3 or OpenDKIM install them into throw-away places
under the package cache (never into the system or mtaplugin's virtualenv).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: (name, script, arguments): the order runs the cheap ones first
BENCHES: list[tuple[str, str, list[str]]] = [
    ("milter-decorated", "postfix_overhead.py", []),
    ("milter-signed", "postfix_overhead.py", ["--dkim"]),
    ("milter-ceiling", "milter_ceiling.py", []),
    ("vs-opendkim", "vs_opendkim.py", []),
    ("big-list", "big_list_decide.py", ["--postgres"]),
    ("web-members", "web_members.py", ["--postgres"]),
    ("rest-vs-mailman", "rest.py", ["--mailman-venv", "--members", "10000"]),
    ("vs-mailman", "vs_mailman.py", ["--posts", "20", "--big-posts", "10"]),
    ("two-hosts", "two_hosts.py", []),
    ("load", "load.py", ["--backend", "both"]),
]


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


def fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return ""
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.{digits}f}"


def table(rows: list[dict[str, str]], markdown: bool) -> str:
    headers = ["bench", "measure", "value", "baseline", "ratio", "goal", "met"]
    cells = [[r.get(h, "") for h in headers] for r in rows]
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(c.replace("|", "/") for c in line) + " |" for line in cells]
        return "\n".join(out)
    widths = [max(len(h), *(len(line[i]) for line in cells)) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small runs (a smoke test)")
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help=f"some of: {', '.join(b[0] for b in BENCHES)}"
    )
    parser.add_argument(
        "--markdown", type=Path, help="write the rows that have a goal as Markdown here"
    )
    parser.add_argument("--log", type=Path, default=Path("var/bench-all.log"))
    args = parser.parse_args()
    chosen = [b for b in BENCHES if not args.only or b[0] in args.only]
    unknown = set(args.only or ()) - {b[0] for b in BENCHES}
    if unknown:
        parser.error(f"--only: unknown bench {', '.join(sorted(unknown))}")
    args.log.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, str]] = []
    failed = 0
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="mtaplugin-bench-all-") as tmp,
        args.log.open("w") as log,
    ):
        for n, (name, script, extra) in enumerate(chosen, 1):
            out = Path(tmp) / f"{name}.json"
            command = [sys.executable, str(HERE / script), *extra, "--json", str(out)]
            if args.quick:
                command.append("--quick")
            print(f"[{n}/{len(chosen)}] {name}: {' '.join(command[1:])}", file=sys.stderr)
            log.write(f"\n===== {name}: {' '.join(command)}\n")
            log.flush()
            t0 = time.monotonic()
            with subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            ) as proc:
                assert proc.stdout is not None
                for line in proc.stdout:
                    sys.stderr.write(f"  {line}")
                    log.write(line)
            took = time.monotonic() - t0
            if proc.returncode != 0 or not out.exists():
                failed += 1
                rows.append({"bench": name, "measure": f"FAILED (exit {proc.returncode})"})
                continue
            data = json.loads(out.read_text())
            print(f"  ({took:.0f} s, load {data.get('load', '?')})", file=sys.stderr)
            for r in data["rows"]:
                met = r.get("met")
                rows.append(
                    {
                        "bench": name,
                        "measure": str(r.get("measure", "?")),
                        "value": f"{fmt(r.get('value'))} {r.get('unit', '')}".strip(),
                        "baseline": r.get("baseline") or "",
                        "ratio": fmt(r.get("ratio")),
                        "goal": r.get("goal") or "",
                        "met": "" if met is None else "yes" if met else "NO",
                    }
                )
    header = (
        f"mtaplugin bench-all{' --quick (smoke test, not figures)' if args.quick else ''}, "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}, {machine()}, "
        f"{(time.monotonic() - started) / 60:.0f} min"
    )
    print(f"\n{header}\n")
    print(table(rows, markdown=False))
    if args.markdown:
        goals = [r for r in rows if r.get("goal") or r["measure"].startswith("FAILED")]
        args.markdown.write_text(f"{header}\n\n{table(goals, markdown=True)}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
