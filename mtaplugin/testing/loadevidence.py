"""What bench/load.py keeps of a round that answered too many posts 4xx or not at all: the
lab is gone when the run ends, so its cause is read from these, afterwards.

:func:`mark` is taken before a phase; when the phase's share is over :data:`THRESHOLD`,
:func:`keep` copies into a folder of its own

  * ``replies.tsv``: every post answered 4xx or not at all (kind, number, code, reply,
    seconds into the phase, seconds it took);
  * ``postfix.log``: Postfix's log lines of the phase that speak of a milter, a warning,
    an error or a refusal (``milter-reject``, ``reject``, ``451``, ...);
  * ``mtaplugin.log``: what ``mtaplugin serve`` and its parts (milter, worker, lookup,
    API) wrote on stderr during the phase, the supervisor's "exited with" lines included
    (a Python fault's stacks too: the daemons enable :mod:`faulthandler`);
  * ``processes.txt``: ``serve``'s parts with their pids and ages before and after;
  * ``core*``: the core files the phase left in the working directory (bench/load.py
    ``--cores`` lets the parts dump core; ``gdb python core`` then ``py-bt``);

and :func:`keep` returns the one-line classification bench/load.py prints: the reply
texts and how many of each, the kinds of Postfix's lines and mtaplugin's warnings, the
parts that exited, the parts whose pid changed.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from mtaplugin.testing.lab import Lab
from mtaplugin.testing.loadbench import Phase

#: a round above this share (percent) of 4xx or unanswered posts is kept
THRESHOLD = 1.0
#: Postfix's lines worth keeping
_POSTFIX = re.compile(
    rb"milter|warning|fatal|panic|error|reject|refused|timeout|timed out|lost connection|"
    rb"\b4\d\d 4\.\d",
    re.IGNORECASE,
)
#: of those, Postfix's own trouble
_POSTFIX_WARNING = re.compile(rb": (warning|fatal|panic|error): ")
#: and the 4xx replies Postfix gave for the milter, by the stage it gave them at
_POSTFIX_4XX = re.compile(rb"milter-reject: ([A-Z-]+) from [^:]*: (4\d\d )?4\.\d")
#: mtaplugin's lines worth classifying (every line is kept)
_MTAPLUGIN = re.compile(
    rb" (WARNING|ERROR|CRITICAL) |exited with|Fatal Python error|Segmentation fault|"
    rb"Traceback|Current thread|Thread 0x"
)
#: Postfix's line prefix: "Dec  5 19:14:44 host name/smtpd[123]: "
_PREFIX = re.compile(r"^\w{3} +\d+ [\d:]+ \S+ ([^:\[]+)(\[\d+\])?: ")
#: what differs between two lines of one kind
_VARIABLE = (
    (re.compile(r"/tmp/mtaplugin-[a-z]+-\w+"), "/tmp/LAB"),
    (re.compile(r"\b[0-9A-F]{8,12}\b|\b[0-9B-DF-HJ-NP-TV-Zb-df-hj-np-tv-z]{12,}\b"), "QID"),
    (re.compile(r"<[^>]*>"), "<ADDR>"),
    (re.compile(r"from [^\s\[]+\[[^\]]*\](:\d+)?"), "from CLIENT"),
    (re.compile(r"\d+(\.\d+)?"), "N"),
)


@dataclass
class Mark:
    """Where the logs ended, and ``serve``'s parts, when a phase began."""

    at: float
    postfix_offset: int
    mtaplugin_offset: int
    processes: str
    #: the working directory's core files already there
    cores: set[str] = field(default_factory=set)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read()
    except FileNotFoundError:
        return b""


def _cores() -> set[str]:
    return {p.name for p in Path.cwd().glob("core*") if p.is_file()}


def processes(lab: Lab) -> str:
    """``serve`` and its parts: pid, age, command line (``ps``-like, from /proc)."""
    proc = lab.process
    if proc is None:
        return "(no mtaplugin process)\n"
    pids = [proc.pid]
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    tick = os.sysconf("SC_CLK_TCK")
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    rows = []
    for pid in pids:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            started = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        except (OSError, IndexError, ValueError):
            rows.append(f"{pid} gone")
            continue
        rows.append(f"{pid} up {uptime - started / tick:.1f} s: {args.strip()}")
    if proc.poll() is not None:
        rows.append(f"serve exited with {proc.returncode}")
    return "\n".join(rows) + "\n"


def mark(lab: Lab) -> Mark:
    return Mark(
        time.time(),
        _size(lab.postfix.maillog),
        _size(lab.runner.log_file),
        processes(lab),
        _cores(),
    )


def kind_of(line: str) -> str:
    """A log line without what differs from one line of its kind to the next."""
    found = _PREFIX.match(line)
    text = line[found.end() :] if found else line
    service = found.group(1).rsplit("/", 1)[-1] if found else ""
    for pattern, replacement in _VARIABLE:
        text = pattern.sub(replacement, text)
    return f"{service}: {text.strip()}"[:160] if service else text.strip()[:160]


def _top(counts: Counter[str], n: int = 3) -> str:
    return "; ".join(f"{count}x {text!r}" for text, count in counts.most_common(n)) or "none"


def _part_pids(text: str) -> dict[str, str]:
    """part name → pid, from :func:`processes`' rows."""
    found = {}
    for row in text.splitlines():
        pid, _sep, rest = row.partition(" up ")
        if rest:
            found[rest.rsplit(" ", 1)[-1]] = pid
    return found


def move_cores(since: Mark, folder: Path) -> list[str]:
    """Move the core files written since ``since`` (a part that crashed, when the bench
    let it dump core) into ``folder``; their names."""
    cores = sorted(_cores() - since.cores)
    if cores:
        folder.mkdir(parents=True, exist_ok=True)
    for core in cores:
        shutil.move(Path.cwd() / core, folder / core)
    return cores


def keep(lab: Lab, phase: Phase, since: Mark, root: Path, name: str) -> tuple[Path, str]:
    """Copy the evidence of ``phase`` (begun at ``since``) into ``root/name``; (the folder,
    the classification)."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    failed = [r for r in phase.offered_results if r.code == 0 or 400 <= r.code < 500]
    with open(folder / "replies.tsv", "w") as f:
        f.write("kind\tn\tcode\treply\tat_s\ttook_s\n")
        for r in sorted(failed, key=lambda r: r.at):
            f.write(f"{r.kind}\t{r.n}\t{r.code}\t{r.text}\t{r.at:.3f}\t{r.seconds:.3f}\n")
    postfix = [
        line
        for line in _read_from(lab.postfix.maillog, since.postfix_offset).splitlines()
        if _POSTFIX.search(line)
    ]
    (folder / "postfix.log").write_bytes(b"".join(line + b"\n" for line in postfix))
    ours = _read_from(lab.runner.log_file, since.mtaplugin_offset)
    (folder / "mtaplugin.log").write_bytes(ours)
    after = processes(lab)
    (folder / "processes.txt").write_text(f"before:\n{since.processes}\nafter:\n{after}")
    cores = move_cores(since, folder)
    replies = Counter(r.text for r in failed)
    warnings = Counter(
        kind_of(line.decode(errors="replace")) for line in postfix if _POSTFIX_WARNING.search(line)
    )
    stages = Counter(
        found.group(1).decode() for line in postfix if (found := _POSTFIX_4XX.search(line))
    )
    our_kinds = Counter(
        kind_of(line.decode(errors="replace"))
        for line in ours.splitlines()
        if _MTAPLUGIN.search(line)
    )
    before_pids, after_pids = _part_pids(since.processes), _part_pids(after)
    restarted = [p for p, pid in before_pids.items() if after_pids.get(p) != pid]
    span = f"{min(r.at for r in failed):.1f}-{max(r.at for r in failed):.1f} s" if failed else "-"
    line = (
        f"{len(failed)} of {len(phase.offered_results)} posts 4xx or unanswered, at {span} "
        f"into the phase; replies: {_top(replies)}; Postfix's milter 4xx lines by stage: "
        f"{', '.join(f'{k} {n}' for k, n in stages.most_common()) or 'none'}; "
        f"Postfix's warnings: {_top(warnings)}; "
        f"mtaplugin: {_top(our_kinds)}; parts restarted: {', '.join(restarted) or 'none'}"
        + (f"; cores: {', '.join(cores)}" if cores else "")
    )
    (folder / "classification.txt").write_text(line + "\n")
    return folder, line
