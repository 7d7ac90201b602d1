"""What a bench reports, for people and for ``bench/all.py`` (``make bench-all``).

A figure is the **median** of several rounds with its **spread** (the lowest and the
highest round), and a ratio is the median of the per-round ratios (a round of mtaplugin
against the round of its baseline run next to it, see ``interleaved``), with their
spread.  Every bench prints its own lines as it goes and, with ``--json PATH``, writes the
figures as::

    {"bench": NAME, "date": "...", "load": "...",
     "rows": [{"measure": str, "value": float, "low": float | None, "high": float | None,
               "rounds": int | None, "unit": str, "baseline": str,
               "ratio": float | None, "ratio_low": float | None, "ratio_high": float | None,
               "goal": str | None, "met": bool | None, "key": str | None}]}

``key`` names the rows of issue 34's goals (``GOALS``), which ``bench/all.py`` prints
first.  ``--quick`` asks for a small run (a smoke test of the bench: its figures are not
to be quoted).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

from mtaplugin.testing.benchdb import machine_load

T = TypeVar("T")

#: the rows of issue 34's goals, in the order bench/all.py prints them: key → what it is
GOALS: dict[str, str] = {
    "non-list": "(a) mail for a non-list domain, milter attached ÷ the same Postfix without",
    "list-sqlite": "(b) list posts through the milter ÷ bare Postfix fanning them out, SQLite",
    "list-postgresql": "(b) list posts through the milter ÷ bare Postfix fanning them out, "
    "PostgreSQL",
    "signed": "(c) signed and sealed ÷ Postfix + OpenDKIM",
    "signed-latency": "(c) signed lone latency ÷ bare Postfix's",
    "load-sqlite-answered": "(d) load, SQLite: answered ÷ bare Postfix's, at bare's rate",
    "load-sqlite-4xx": "(d) load, SQLite: 4xx (or no answer) share",
    "load-sqlite-lost": "(d) load, SQLite: lost",
    "load-postgresql-answered": "(d) load, PostgreSQL: answered ÷ bare Postfix's, at bare's rate",
    "load-postgresql-4xx": "(d) load, PostgreSQL: 4xx (or no answer) share",
    "load-postgresql-lost": "(d) load, PostgreSQL: lost",
}


#: a ratio to a limit above this is a broken baseline, not a result (``Report.add``)
SUSPECT = 2.0


@dataclass(frozen=True)
class Spread:
    """The median of some rounds and their lowest and highest value."""

    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            nan = float("nan")
            return cls(nan, nan, nan, 0)
        return cls(statistics.median(values), min(values), max(values), len(values))

    @classmethod
    def ratios(cls, values: Sequence[float], baselines: Sequence[float]) -> Spread:
        """The per-round ratios ``values[i] / baselines[i]`` (rounds run next to each other)."""
        return cls.of([v / b for v, b in zip(values, baselines, strict=True) if b])

    def text(self, digits: int = 2) -> str:
        """``0.64 [0.58-0.70]``: the median, then the lowest and highest round."""
        if self.n == 0:
            return "-"
        if self.n == 1:
            return f"{number(self.median, digits)} [1 round]"
        return (
            f"{number(self.median, digits)} "
            f"[{number(self.low, digits)}-{number(self.high, digits)}]"
        )


def number(value: float, digits: int = 2) -> str:
    """A figure as the tables print it: no decimals from 100 up."""
    if value != value:  # NaN
        return "nan"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.{digits}f}"


@dataclass(frozen=True)
class Goal:
    """A goal on a row's ratio (or on its value when the row has no ratio): ``op`` is one
    of ``>=``, ``<=``, ``<``, ``==``; it is judged on the median."""

    op: str
    threshold: float

    def met(self, value: float) -> bool:
        if self.op == ">=":
            return value >= self.threshold
        if self.op == "<=":
            return value <= self.threshold
        if self.op == "<":
            return value < self.threshold
        if self.op == "==":
            return value == self.threshold
        raise ValueError(f"goal: unknown comparison {self.op!r}")

    def __str__(self) -> str:
        return f"{self.op} {self.threshold:g}"


@dataclass
class Row:
    measure: str
    value: float
    unit: str
    baseline: str = ""
    ratio: float | None = None
    goal: str | None = None
    met: bool | None = None
    low: float | None = None
    high: float | None = None
    rounds: int | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    key: str | None = None


@dataclass
class Report:
    bench: str
    rows: list[Row] = field(default_factory=list)
    load_before: str = field(default_factory=machine_load)
    #: more for the JSON file (a bench's raw rounds)
    extra: dict[str, object] = field(default_factory=dict)

    def add(
        self,
        measure: str,
        value: float | Spread,
        unit: str,
        *,
        baseline: str = "",
        ratio: float | Spread | None = None,
        goal: Goal | str | None = None,
        met: bool | None = None,
        key: str | None = None,
        limit: bool = False,
    ) -> Row:
        """A row; ``met`` is judged from a ``Goal`` on the ratio's median (or the value's,
        when there is no ratio) unless given.  ``limit``: the baseline is what mtaplugin
        cannot beat (Postfix doing the same work without it); a median ratio above
        ``SUSPECT`` is then not claimed: the row says the baseline is broken."""
        if isinstance(value, Spread):
            med, low, high, n, shown = value.median, value.low, value.high, value.n, value.text()
        else:
            med, low, high, n, shown = float(value), None, None, None, number(float(value))
        shown += f" {unit}"
        r_med = r_low = r_high = None
        if isinstance(ratio, Spread):
            r_med, r_low, r_high = ratio.median, ratio.low, ratio.high
            shown += f", ratio {ratio.text()}"
        elif ratio is not None:
            r_med = float(ratio)
            shown += f", ratio {number(r_med)}"
        if isinstance(goal, Goal) and met is None:
            met = goal.met(med if r_med is None else r_med)
        if limit and r_med is not None and r_med > SUSPECT:
            baseline += f"; SUSPECT: {r_med:.2f}x its own limit, a broken baseline"
            met = None if goal is None else False
        row = Row(
            measure, med, unit, baseline, r_med, None if goal is None else str(goal), met,
            low, high, n, r_low, r_high, key,
        )  # fmt: skip
        self.rows.append(row)
        if baseline:
            shown += f" (÷ {baseline})"
        if row.goal is not None:
            shown += f"; goal {row.goal}: {'met' if met else 'NOT met'}"
        print(f"  {measure}: {shown}", flush=True)
        return row

    def write(self, path: Path | str | None) -> None:
        if not path:
            return
        Path(path).write_text(
            json.dumps(
                {
                    "bench": self.bench,
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "load": f"{self.load_before} before, {machine_load()} after",
                    "rows": [asdict(r) for r in self.rows],
                    **self.extra,
                },
                indent=1,
                ensure_ascii=False,
            )
            + "\n"
        )


def interleaved(rounds: int, items: Sequence[T]) -> Iterator[tuple[int, T]]:
    """(round, item) for ``rounds`` rounds of every item: forward in even rounds, backward in
    odd ones (A B, B A, A B ...), so that the baseline and mtaplugin take turns and neither
    always runs first after a pause or last while the machine is busiest."""
    for r in range(rounds):
        for item in items if r % 2 == 0 else list(reversed(items)):
            yield r, item


def progress(message: str) -> None:
    """One line of progress on stderr, with the time of day (bench/all.py shows it)."""
    print(f"  {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def add_arguments(parser: argparse.ArgumentParser, rounds: int | None = 5) -> None:
    """``--quick`` and ``--json PATH``, the two options ``bench/all.py`` passes, and
    ``--rounds`` (unless ``rounds`` is None)."""
    parser.add_argument(
        "--quick", action="store_true", help="a small run (smoke test; figures not to quote)"
    )
    parser.add_argument("--json", type=Path, help="write the figures to this file as JSON")
    if rounds is not None:
        parser.add_argument(
            "--rounds",
            type=int,
            default=rounds,
            help=f"interleaved rounds of each path; figures are their medians (default {rounds})",
        )
