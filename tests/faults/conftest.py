"""Faults injected into real processes (``tests/faults``); see ledger.py for the table."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults.ledger import ROWS, render


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not ROWS:
        return
    text = render(ROWS)
    terminalreporter.write_sep("=", "fault table (lost must be 0)")
    terminalreporter.write_line(text)
    target = os.environ.get("MTAPLUGIN_FAULT_TABLE")
    if target:
        Path(target).write_text(text + "\n")
