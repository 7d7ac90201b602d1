"""``mtaplugin digests status|send``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import make_engine
from mtaplugin.digests import store
from mtaplugin.manage import lists
from mtaplugin.model import OutboxMessage
from tests.helpers import ROOT, make_post


def keep(db: sessionmaker[Session], team: str, *subjects: str) -> None:
    with db.begin() as s:
        mlist = lists.get(s, team)
        for subject in subjects:
            raw = make_post("ann@example.com", team, subject)
            store.add(s, mlist.id, raw, subject=subject, now=datetime.now(UTC))


def test_status_and_send(run, db, team: str):
    run("members", "add", team, "ann@example.com", "--delivery-mode", "mime_digests")
    run("members", "add", team, "pat@example.com", "--delivery-mode", "plaintext_digests")
    run("members", "add", team, "reg@example.com")
    keep(db, team, "one", "two")
    status = run("digests", "status", team)
    assert status.code == 0
    assert "vol 1, next issue 1; 2 posts waiting" in status.out
    assert "2 digest members" in status.out
    sent = run("digests", "send", team)
    assert sent.code == 0
    assert sent.out.strip() == (
        f"{team}: sent vol 1, issue 1: 2 posts to 2 digest members "
        "(mime_digests 1, plaintext_digests 1)"
    )
    with db() as s:
        rows = list(s.scalars(select(OutboxMessage).where(OutboxMessage.kind == "digest")))
        assert sorted(r.recipients[0] for r in rows) == ["ann@example.com", "pat@example.com"]
    again = run("digests", "send", team)
    assert again.out.strip() == f"{team}: no post is waiting for a digest"
    assert "next issue 2; 0 posts waiting" in run("digests", "status", team).out


def test_all_and_bad_arguments(run, db, team: str):
    assert run("digests", "send", "--all").out.strip() == ("no list has posts waiting for a digest")
    keep(db, team, "dropped")
    # No digest member: the posts are dropped, as Mailman does, and the answer says so.
    out = run("digests", "send", "--all").out
    assert "no digest member: the 1 posts waiting were dropped" in out
    bad = run("digests", "send")
    assert bad.code == 1 and "LIST" in bad.err
    assert run("digests", "send", team, "--all").code == 1
    assert run("digests", "status", "nosuch@lists.test").code == 1


def test_a_send_killed_midway_loses_and_repeats_nothing(run, db, team: str, cli_env: str):
    """``kill -9`` of ``mtaplugin digests send`` while it waits on the database: nothing
    of it stays, and the next send delivers every post once."""
    run("members", "add", team, "ann@example.com", "--delivery-mode", "mime_digests")
    keep(db, team, "one", "two")
    engine = make_engine(cli_env)
    conn = engine.connect()
    if engine.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # the send can read, not write
    else:
        conn.exec_driver_sql("LOCK TABLE digest_queue IN ACCESS EXCLUSIVE MODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTAPLUGIN_")}
    env["MTAPLUGIN_DATABASE_URL"] = cli_env
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtaplugin.cli", "digests", "send", team],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(2.0)
        assert proc.poll() is None, "the send did not wait on the lock"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        conn.rollback()
        conn.close()
        engine.dispose()
    with db() as s:
        assert not list(s.scalars(select(OutboxMessage).where(OutboxMessage.kind == "digest")))
        assert store.pending(s, lists.get(s, team).id).posts == 2
    assert "2 posts to 1 digest members" in run("digests", "send", team).out
    with db() as s:
        (row,) = s.scalars(select(OutboxMessage).where(OutboxMessage.kind == "digest"))
        assert row.raw.count(b"Content-Type: message/rfc822") == 2
