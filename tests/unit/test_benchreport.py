"""What the benches report (mtaplugin/testing/benchreport.py) and how bench/all.py tabulates
it: medians of interleaved rounds with their spread, ratios paired round by round, goals
judged on the median, a ratio above its own limit's flagged as a broken baseline, and the
goals of issue 34 first, in Markdown for the README."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtaplugin.testing.benchreport import GOALS, Goal, Report, Spread, interleaved
from tests.helpers import bench_all

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_a_figure_is_the_median_of_its_rounds_with_the_lowest_and_highest() -> None:
    s = Spread.of([5.0, 1.0, 9.0, 4.0, 6.0])
    assert (s.median, s.low, s.high, s.n) == (5.0, 1.0, 9.0, 5)
    assert s.text() == "5.00 [1.00-9.00]"
    assert Spread.of([250.0, 300.0, 120.0]).text() == "250 [120-300]"
    assert Spread.of([0.5]).text() == "0.50 [1 round]"
    assert Spread.of([]).text() == "-"


def test_a_ratio_pairs_each_round_with_the_baseline_run_next_to_it() -> None:
    # a slow machine in round 2 slows both sides: the paired ratio does not move
    ours, bare = [50.0, 10.0, 52.0], [100.0, 20.0, 100.0]
    r = Spread.ratios(ours, bare)
    assert (r.median, r.low, r.high) == (0.5, 0.5, 0.52)
    with pytest.raises(ValueError):
        Spread.ratios([1.0], [1.0, 2.0])


def test_rounds_alternate_their_order_so_no_side_always_goes_first() -> None:
    order = list(interleaved(4, ["bare", "milter"]))
    assert order == [
        (0, "bare"), (0, "milter"), (1, "milter"), (1, "bare"),
        (2, "bare"), (2, "milter"), (3, "milter"), (3, "bare"),
    ]  # fmt: skip


def test_a_goal_is_judged_on_the_median_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    report = Report("t")
    row = report.add(
        "list posts ÷ bare", Spread.of([30.0, 40.0, 35.0]), "posts/s",
        ratio=Spread.ratios([30.0, 40.0, 35.0], [50.0, 50.0, 50.0]), goal=Goal(">=", 0.7),
        key="list-sqlite",
    )  # fmt: skip
    assert row.ratio == 0.7 and row.ratio_low == 0.6 and row.ratio_high == 0.8
    assert row.met is True and row.goal == ">= 0.7" and row.rounds == 3
    assert "ratio 0.70 [0.60-0.80]" in capsys.readouterr().out
    assert Goal("<", 1.0).met(1.0) is False
    assert Goal("==", 0).met(0) is True


def test_beating_its_own_limit_twice_over_is_a_broken_baseline_not_a_result() -> None:
    report = Report("t")
    row = report.add(
        "mtaplugin ÷ the limit", Spread.of([9.0]), "posts/s", baseline="the limit",
        ratio=Spread.ratios([9.0], [4.0]), goal=Goal(">=", 0.9), limit=True,
    )  # fmt: skip
    assert row.met is False
    assert "SUSPECT" in row.baseline and "broken baseline" in row.baseline
    fine = report.add("same", 1.0, "x", ratio=1.9, goal=Goal(">=", 0.9), limit=True)
    assert fine.met is True and "SUSPECT" not in fine.baseline


def test_the_json_report_keeps_each_figure_with_its_spread(tmp_path: Path) -> None:
    report = Report("t")
    report.add("a", Spread.of([1.0, 2.0, 3.0]), "ms", ratio=Spread.of([0.9, 1.0, 1.1]))
    report.extra["runs"] = [{"round": 1}]
    report.write(tmp_path / "t.json")
    data = json.loads((tmp_path / "t.json").read_text())
    (row,) = data["rows"]
    assert (row["value"], row["low"], row["high"], row["rounds"]) == (2.0, 1.0, 3.0, 3)
    assert (row["ratio"], row["ratio_low"], row["ratio_high"]) == (1.0, 0.9, 1.1)
    assert data["runs"] == [{"round": 1}] and "load" in data


def report_rows(tmp_path: Path) -> dict[str, object]:
    report = Report("postfix_overhead")
    report.add(
        "sqlite: non-list mail", Spread.of([266.0, 240.0, 278.0]), "msg/s",
        baseline="without the milter 331/s",
        ratio=Spread.ratios([266.0, 240.0, 278.0], [331.0, 276.0, 437.0]),
        goal=Goal(">=", 0.95), key="non-list",
    )  # fmt: skip
    report.add("sqlite: non-list mail, CPU per message", Spread.of([0.6, 0.7, 0.7]), "ms")
    report.write(tmp_path / "r.json")
    return dict(json.loads((tmp_path / "r.json").read_text()))


def test_bench_all_prints_the_goals_first_as_markdown(tmp_path: Path) -> None:
    all_py = bench_all()
    text = all_py.render([("postfix-overhead", report_rows(tmp_path))], markdown=True)
    goals, every = text.split("Every row with a goal")
    lines = [line for line in goals.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| goal of issue 34 | measure | mtaplugin | baseline | ratio |")
    assert len(lines) == 1 + len(GOALS)  # a header, then every goal in order
    assert lines[1].startswith(f"| {GOALS['non-list']} |")
    assert "| 266 [240-278] msg/s |" in lines[1] and "| >= 0.95 | NO |" in lines[1]
    assert "| 0.80 [0.64-0.87] |" in lines[1]
    # a goal no bench of this run measured says so
    assert "not measured in this run" in lines[2]
    assert "sqlite: non-list mail, CPU per message" not in every  # (no goal)
    assert "| postfix-overhead | sqlite: non-list mail | 266 [240-278] msg/s" in every
    plain = all_py.render([("postfix-overhead", report_rows(tmp_path))], markdown=False)
    assert "sqlite: non-list mail, CPU per message  0.70 [0.60-0.70] ms" in plain


def test_bench_all_shows_the_floors_ratios_in_markdown(tmp_path: Path) -> None:
    report = Report("vs_opendkim")
    report.add("floor: no-op, journal + archiver ÷ Postfix + OpenDKIM", Spread.of([290.0, 310.0]),
               "msg/s", ratio=Spread.of([0.81, 0.9]))  # fmt: skip
    report.add("floor: no-op, journal + archiver, longest journal → archive", 0.2, "s")
    report.write(tmp_path / "f.json")
    data = json.loads((tmp_path / "f.json").read_text())
    text = bench_all().render([("vs-opendkim", data)], markdown=True)
    every = text.split("Every row with a goal")[1]
    assert "| vs-opendkim | floor: no-op, journal + archiver ÷ Postfix + OpenDKIM |" in every
    assert "0.85 [0.81-0.90]" in every
    assert "longest journal" not in every  # (no ratio: in the full table only)


def test_a_failed_bench_is_a_row_and_its_goals_say_it_failed(tmp_path: Path) -> None:
    all_py = bench_all()
    text = all_py.render(
        [("postfix-overhead", report_rows(tmp_path)), ("load", {"failed": 1})], markdown=False
    )
    assert "FAILED (exit 1)" in text
    assert text.count("not measured: load failed") == 6  # the six load goals


def test_bench_all_names_every_bench_it_runs() -> None:
    all_py = bench_all()
    for bench in all_py.BENCHES:
        assert (BENCH / bench.script).exists(), bench.script
    assert [b.name for b in all_py.BENCHES][:3] == ["postfix-overhead", "vs-opendkim", "load"]
