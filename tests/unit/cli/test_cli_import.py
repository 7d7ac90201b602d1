"""``mtaplugin import mailman2`` in-process on SQLite and PostgreSQL, with the pickle
Mailman 3.3.10 ships."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.errors import NotFound
from mtaplugin.manage import lists
from mtaplugin.testing.mailman_files import mailman_testing_file
from tests.unit.cli.conftest import Run


def test_the_command_dry_run_changes_nothing_then_imports(
    run: Run, db: sessionmaker[Session]
) -> None:
    path = str(mailman_testing_file("config.pck"))
    dry = run("import", "mailman2", "test@example.com", path, "--dry-run")
    assert dry.code == 0, dry.err
    assert "dry run" in dry.out and "add 3 member(s)" in dry.out
    with db() as s, pytest.raises(NotFound):
        lists.get(s, "test@example.com")
    done = run("import", "mailman2", "test@example.com", path)
    assert done.code == 0, done.err
    assert "note: member passwords were not carried over" in done.out
    again = run("import", "mailman2", "test@example.com", path)
    assert "already matches" in again.out
    refused = run("import", "mailman2", "test@example.com", "/nonexistent/config.pck")
    assert refused.code == 1 and "cannot read" in refused.err
