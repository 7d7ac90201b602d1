"""``bench/postfix_overhead.py --quick``, end to end on a private Postfix and ``mtaplugin
serve`` (SQLite, archive on): every path of every round delivered every copy (the bench
stops with an error otherwise), and its report has each figure as the median of its rounds
with their spread, the goals of issue 34 it measures under their keys, and renders in
bench/all.py's Markdown table; the required-work floor's archive holds every post it
answered.  No timing is asserted: the figures of a smoke run on a
shared machine mean nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import bench_all

BENCH = Path(__file__).resolve().parents[2] / "bench" / "postfix_overhead.py"


def test_postfix_overhead_quick_reports_medians_of_interleaved_rounds(tmp_path: Path) -> None:
    out = tmp_path / "overhead.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--backend", "sqlite", "--messages", "20",
         "--rounds", "2", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # progress as it goes: every round of every path has its line
    # (the four paths; the two floors beside goal (b) and the limit on the floor's Postfix)
    assert proc.stderr.count("round 2/2 ") == 7, proc.stderr
    data = json.loads(out.read_text())
    every = {r["measure"]: r for r in data["rows"]}
    # the required-work floor's figures of the whole run (not of rounds)
    whole = {m: r for m, r in every.items() if r["rounds"] is None}
    assert whole and all(m.startswith("floor: ") for m in whole)
    (archived,) = (r for m, r in whole.items() if "archived of" in m)
    answered = 50 + 2 * 20  # the warm-up, then 2 rounds of 20
    assert archived["value"] == answered, archived
    assert f"archived of {answered} answered (journal left 0)" in archived["measure"]
    rows = {m: r for m, r in every.items() if m not in whole}
    for row in rows.values():
        assert row["rounds"] == 2
        assert row["low"] <= row["value"] <= row["high"]
        if row["ratio"] is not None:
            assert row["ratio_low"] <= row["ratio"] <= row["ratio_high"]
    keyed = {r["key"]: r for r in data["rows"] if r["key"]}
    assert set(keyed) == {"non-list", "list-sqlite"}
    assert keyed["non-list"]["goal"] == ">= 0.95"
    assert keyed["list-sqlite"]["goal"] == ">= 0.7"
    assert "the limit" in keyed["list-sqlite"]["baseline"]
    assert all(isinstance(r["met"], bool) for r in keyed.values())
    table = bench_all().render([("postfix-overhead", data)], markdown=True)
    assert table.count(" [") >= 2 * len(rows)  # every figure with its spread
