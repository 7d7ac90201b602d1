"""Fixtures: real databases (SQLite and a PostgreSQL server started here), and the
private Postfix lab in tests/integration/conftest.py."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.testing.debpkg import PackageError
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.ldap import Directory, LdapError, LdapServer
from mtaplugin.testing.postgres import PostgresServer

BACKENDS = ["sqlite", "postgresql"]
_counter = itertools.count(1)


@pytest.fixture(scope="session")
def lab_root() -> Iterator[Path]:
    """A directory the unprivileged postfix and postgres users can traverse."""
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-test-", dir="/tmp"))
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres(lab_root: Path) -> Iterator[PostgresServer]:
    server = PostgresServer(lab_root / "pg").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def sqlite_template(lab_root: Path) -> Path:
    path = lab_root / "templates" / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def postgres_template(postgres: PostgresServer) -> str:
    postgres.execute("CREATE DATABASE mtaplugin_template")
    upgrade(postgres.url("mtaplugin_template"))
    return "mtaplugin_template"


def fresh_database(request: pytest.FixtureRequest, backend: str, lab_root: Path) -> str:
    """A new, migrated database on ``backend``; returns its URL."""
    n = next(_counter)
    if backend == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = lab_root / "db" / f"test_{n}.db"
        path.parent.mkdir(exist_ok=True)
        os.chmod(path.parent, 0o755)
        shutil.copy(template, path)
        return f"sqlite:///{path}"
    server: PostgresServer = request.getfixturevalue("postgres")
    template_name: str = request.getfixturevalue("postgres_template")
    server.execute(f"CREATE DATABASE test_{n} TEMPLATE {template_name}")
    return server.url(f"test_{n}")


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, lab_root: Path) -> str:
    return fresh_database(request, request.param, lab_root)


@pytest.fixture
def sessions(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url, timeout=2.0)
    yield sessionmaker_for(engine)
    engine.dispose()


@pytest.fixture
def session(sessions: sessionmaker[Session]) -> Iterator[Session]:
    with sessions() as s, s.begin():
        yield s


@pytest.fixture
def dns_server() -> Iterator[DnsServer]:
    """A real authoritative DNS server on 127.0.0.1 (UDP and TCP), its zone empty."""
    server = DnsServer().start()
    yield server
    server.stop()


@pytest.fixture
def ldap_server(lab_root: Path) -> Iterator[LdapServer]:
    """A private OpenLDAP (Debian's slapd unpacked into the package cache) on 127.0.0.1,
    with a database of its own, empty but for its suffix, ``ou=people``, ``ou=groups``
    and a reader limited to two entries per search.  Skipped when slapd cannot be
    installed, except on the CI machine (CI=true), where that fails the test."""
    root = Path(tempfile.mkdtemp(prefix="ldap-", dir=lab_root))
    try:
        server = LdapServer(root).start()
    except (PackageError, LdapError, OSError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"slapd cannot run on the CI machine: {exc}")
        pytest.skip(f"slapd cannot run here: {exc}")
    directory = Directory(server).seed()
    directory.close()
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)
