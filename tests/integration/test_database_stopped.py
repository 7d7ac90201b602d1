"""The acceptance test of the outage: PostgreSQL stopped → 4xx; restarted → the same post
is delivered.  A PostgreSQL server of its own, so that stopping it disturbs no other test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists, members
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.postgres import PostgresServer
from tests.helpers import make_post
from tests.replies import Reply

LIST = "outage@stopped.test"


@pytest.fixture(scope="module")
def stoppable(lab_root: Path) -> Iterator[tuple[PostgresServer, Lab]]:
    server = PostgresServer(lab_root / "pg-stoppable").start()
    server.execute("CREATE DATABASE lists")
    url = server.url("lists")
    upgrade(url)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, "stopped.test")
        members.add(s, lists.create(s, LIST), "ann@example.org")
    engine.dispose()
    lab = Lab(root=lab_root / "lab-stoppable", database_url=url, name="lab-stoppable")
    lab.start()
    yield server, lab
    lab.stop()
    server.stop()


def test_stopped_postgresql_gives_4xx_and_the_retry_is_delivered(stoppable):
    server, lab = stoppable
    # The mail system has been running against the database, as a real one has.
    assert lab.send("ann@example.org", [LIST], make_post("ann@example.org", LIST)) is None
    wait_for(lambda: lab.sink.to("ann@example.org"), timeout=30)
    lab.sink.clear()
    post = make_post("ann@example.org", LIST, subject="during the outage")
    server.stop()
    try:
        refused = lab.send("ann@example.org", [LIST], post)
        assert refused is not None and Reply.of(refused.code, refused.text).temporary, refused
        assert refused.stage in {"rcpt", "data"}
        assert not lab.sink.to("ann@example.org")
    finally:
        server.resume()

    # The sender's MTA retries: the same post now goes through.
    attempts = []

    def retried() -> bool:
        # Other traffic first, in the same session, as on a real server: Postfix's smtpd
        # keeps its last address resolution (here, the failure) until it resolves another.
        with lab.connect() as smtp:
            smtp.mail("ann@example.org")
            smtp.rcpt(f"other-{len(attempts)}@stopped.test")
            smtp.rset()
            smtp.mail("ann@example.org")
            code, text = smtp.rcpt(LIST)
            if code == 250:
                code, text = smtp.data(post)
        attempts.append((code, text))
        return code == 250

    try:
        wait_for(retried, timeout=90, interval=2)
    except TimeoutError:
        raise AssertionError(f"{attempts[-1]}\n{lab.postfix.log()[-4000:]}") from None
    wait_for(lambda: lab.sink.to("ann@example.org"), timeout=30)
    assert b"during the outage" in lab.sink.to("ann@example.org")[0].data
