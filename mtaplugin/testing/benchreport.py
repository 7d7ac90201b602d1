"""What a bench reports, for people and for ``bench/all.py`` (``make bench-all``).

Every bench prints its own lines and, with ``--json PATH``, writes the same figures as::

    {"bench": NAME, "load": "...", "rows": [{"measure": str, "value": float, "unit": str,
      "baseline": str, "ratio": float | None, "goal": str | None, "met": bool | None}]}

``--quick`` asks for a small run (a smoke test of the bench, its figures are not to be
quoted).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mtaplugin.testing.benchdb import machine_load


@dataclass
class Row:
    measure: str
    value: float
    unit: str
    baseline: str = ""
    ratio: float | None = None
    goal: str | None = None
    met: bool | None = None


@dataclass
class Report:
    bench: str
    rows: list[Row] = field(default_factory=list)
    load_before: str = field(default_factory=machine_load)

    def add(
        self,
        measure: str,
        value: float,
        unit: str,
        *,
        baseline: str = "",
        ratio: float | None = None,
        goal: str | None = None,
        met: bool | None = None,
    ) -> Row:
        row = Row(measure, value, unit, baseline, ratio, goal, met)
        self.rows.append(row)
        return row

    def write(self, path: Path | None) -> None:
        if path is None:
            return
        path.write_text(
            json.dumps(
                {
                    "bench": self.bench,
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "load": f"{self.load_before} before, {machine_load()} after",
                    "rows": [asdict(r) for r in self.rows],
                },
                indent=1,
                ensure_ascii=False,
            )
            + "\n"
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--quick`` and ``--json PATH``, the two options ``bench/all.py`` passes."""
    parser.add_argument(
        "--quick", action="store_true", help="a small run (smoke test; figures not to quote)"
    )
    parser.add_argument("--json", type=Path, help="write the figures to this file as JSON")
