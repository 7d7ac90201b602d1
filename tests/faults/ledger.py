"""The fault table: one row per fault injected, printed at the end of the run.

Every test in ``tests/faults`` records what it offered and what came out with
:func:`record`; the conftest prints the rows as one table (``make test-faults``) and
writes them to ``$MTAPLUGIN_FAULT_TABLE`` when that is set.  ``lost`` must be 0: each test
asserts it itself, the table is for people.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

#: how many times each randomised fault is repeated: a few in ``make test`` (CI's
#: budget), many in ``make test-faults`` (MTAPLUGIN_FAULT_RUNS=20)
RUNS = max(1, int(os.environ.get("MTAPLUGIN_FAULT_RUNS", "2")))


@dataclass
class FaultRow:
    fault: str
    backend: str
    offered: int = 0
    accepted: int = 0  # answered 250
    deferred: int = 0  # answered 4xx (and offered again until accepted)
    refused: int = 0  # answered 5xx by a rule (expected by the scenario)
    delivered: int = 0  # distinct (post, member) copies that reached the sink
    duplicates: int = 0  # copies beyond the first
    lost: int = 0  # expected copies that never arrived; must be 0
    notes: list[str] = field(default_factory=list)


ROWS: list[FaultRow] = []


def record(row: FaultRow) -> FaultRow:
    ROWS.append(row)
    return row


HEADERS = ("fault", "db", "offered", "250", "4xx", "5xx", "delivered", "dup", "lost")


def render(rows: list[FaultRow]) -> str:
    table = [HEADERS] + [
        (
            r.fault,
            r.backend,
            str(r.offered),
            str(r.accepted),
            str(r.deferred),
            str(r.refused),
            str(r.delivered),
            str(r.duplicates),
            str(r.lost),
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS))]
    out = []
    for n, line in enumerate(table):
        cells = [
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
