"""Fixtures of the CLI tests: ``main()`` run in-process on the test database (SQLite and
PostgreSQL), and sessions on that database to see what the commands did."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.cli import main
from mtaplugin.db import make_engine, sessionmaker_for
from tests.unit.cli.util import Result

Run = Callable[..., Result]


@pytest.fixture
def cli_env(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The CLI's settings come from the environment: only the database is set."""
    monkeypatch.delenv("MTAPLUGIN_CONFIG", raising=False)
    monkeypatch.setenv("MTAPLUGIN_DATABASE_URL", db_url)
    return db_url


@pytest.fixture
def db(cli_env: str) -> Iterator[sessionmaker[Session]]:
    """Sessions on the CLI's database, to see what the commands did."""
    engine = make_engine(cli_env)
    yield sessionmaker_for(engine)
    engine.dispose()


@pytest.fixture
def run(cli_env: str, capsys: pytest.CaptureFixture[str]) -> Run:
    """``run("members", "list", LIST)``: the exit status and what was printed."""

    def _run(*argv: str) -> Result:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return _run


@pytest.fixture
def team(run: Run, db: sessionmaker[Session]) -> str:
    """An empty list, team@lists.test, with the default style."""
    assert run("domains", "add", "lists.test").code == 0
    assert run("lists", "create", "team@lists.test").code == 0
    return "team@lists.test"
