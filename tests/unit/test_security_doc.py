"""docs/security.md's table "What holds, and the test that holds it": every test it names
exists, so that a promise cannot outlive the test that held it (renamed or removed)."""

from __future__ import annotations

import re
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
DOC = TOP / "docs" / "security.md"
HEADING = "## What holds, and the test that holds it"


def rows() -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    assert HEADING in text
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    assert lines[0].replace(" ", "") == "|Promise|Test|Finding|"
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def named_tests(cell: str) -> list[tuple[str, str | None]]:
    """``path::name`` and ``::name`` (the path of the one before), or a bare path."""
    found: list[tuple[str, str | None]] = []
    path = ""
    for ref in re.findall(r"`([^`]+)`", cell):
        file, _sep, name = ref.partition("::")
        path = file or path
        found.append((path, name or None))
    return found


def test_every_row_names_a_test_and_a_finding() -> None:
    table = rows()
    assert table
    for promise, tests, finding in table:
        assert promise and named_tests(tests), promise
        # a finding of the review (H1..L8), or "--" for a promise no finding was about
        assert finding == "--" or re.search(r"\b[HML]\d+\b", finding), (promise, finding)


def test_every_test_the_table_names_exists() -> None:
    missing = []
    for _promise, tests, _finding in rows():
        for path, name in named_tests(tests):
            file = TOP / path
            if not file.exists():
                missing.append(path)
            elif name and not re.search(
                rf"^(async )?def {re.escape(name)}\(", file.read_text(), re.M
            ):
                missing.append(f"{path}::{name}")
    assert missing == []
