"""contrib/postfix/main.cf and docs/postfix.md say the same, and the lines name the
packaged socket layout (under Postfix's queue directory, relative names)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAIN_CF = ROOT / "contrib" / "postfix" / "main.cf"
DOC = ROOT / "docs" / "postfix.md"


def settings_lines() -> list[str]:
    return [
        line
        for line in MAIN_CF.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]


def test_the_doc_shows_every_line_of_contrib_main_cf() -> None:
    doc = DOC.read_text()
    missing = [line for line in settings_lines() if line not in doc]
    assert not missing, f"docs/postfix.md lacks: {missing}"


def test_chrooted_processes_reach_every_socket_by_a_relative_name() -> None:
    lines = "\n".join(settings_lines())
    assert "unix:mtaplugin/milter.sock" in lines
    assert "socketmap:unix:mtaplugin/lookup.sock:recipients" in lines
    # nothing outside the queue directory but the postmapped tables
    assert "/run/" not in lines
    for line in settings_lines():
        for word in line.replace(",", " ").split():
            if word.startswith(("unix:/", "socketmap:unix:/")):
                raise AssertionError(f"an absolute socket path, unreachable chrooted: {line}")
