"""The alternative contrib lookup tables (mtaplugin-domains.pgsql.cf and .sqlite.cf),
used as they are by a private Postfix with the milter alone (no socketmap server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.manage import domains, lists, members
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.conftest import BACKENDS, fresh_database
from tests.helpers import make_post


@pytest.mark.parametrize("backend", BACKENDS)
def test_postfix_table_lookup_over_the_list_database(
    request: pytest.FixtureRequest, lab_root: Path, backend: str
) -> None:
    url = fresh_database(request, backend, lab_root)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, "tables.test")
        members.add(s, lists.create(s, "crew@tables.test"), "ann@example.org")
    engine.dispose()
    lab = Lab(
        root=lab_root / f"lab-table-{backend}",
        database_url=url,
        command=("milter",),
        name=f"lab-table-{backend}",
    )
    lab.start()
    try:
        conf = (lab.postfix.conf / "main.cf").read_text()
        assert f"{'pgsql' if backend == 'postgresql' else 'sqlite'}:" in conf
        assert (
            lab.send(
                "ann@example.org",
                ["crew@tables.test"],
                make_post("ann@example.org", "crew@tables.test"),
            )
            is None
        )
        wait_for(lambda: lab.sink.to("ann@example.org"), timeout=30)
        refused = lab.send(
            "ann@example.org", ["x@elsewhere.test"], make_post("ann@example.org", "x")
        )
        assert refused is not None and "Relay access denied" in refused.text
    finally:
        lab.stop()
