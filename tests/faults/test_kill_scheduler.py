"""kill -9 of the scheduler in the middle of a job: the daily digests job over many lists.

``mtaplugin jobs run digests`` (the scheduler's runner, as ``mtaplugin worker`` runs it)
sends the digest of every list with posts waiting, one list per transaction; it is killed
with SIGKILL at random moments and run again once its lease has run out (the test moves
``lease_until`` back instead of waiting the 10 minutes).  Afterwards every post waiting
went out in exactly one digest (one outbox row per list), no post is still waiting, and
each list's issue number moved on once.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select, update

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.digests import store
from mtaplugin.enums import DeliveryMode
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import DigestEntry, MailingList, OutboxMessage
from mtaplugin.model.scheduler import JobRun
from mtaplugin.testing import wait_for
from tests.faults.ledger import RUNS, FaultRow, record
from tests.faults.procs import SLOW, backend_of, post

pytestmark = SLOW

LISTS = 20 if RUNS < 10 else 120
POSTS = 3
MARKER = re.compile(rb"body (dg-\d+-\d+)")


def seed_lists(db_url: str) -> set[str]:
    """LISTS lists with two MIME-digest members and POSTS posts waiting each; the markers."""
    engine = make_engine(db_url)
    markers = set()
    now = datetime.now(UTC)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, "lists.test", "fault tests")
        for n in range(LISTS):
            mlist = lists.create(s, f"dg{n}@lists.test")
            mlist.digests_enabled = mlist.digest_send_periodic = True
            for who in ("ann@example.com", "bob@example.net"):
                members.add(s, mlist, who, delivery_mode=DeliveryMode.mime_digests)
            s.flush()
            for p in range(POSTS):
                marker = f"dg-{n}-{p}"
                raw = post(marker, "ann@example.com", f"dg{n}@lists.test", subject=f"post {p}")
                store.add(
                    s, mlist.id, raw, message_id=f"<{marker}@client.test>", subject="x", now=now
                )
                markers.add(marker)
    engine.dispose()
    return markers


def test_kill_9_of_the_scheduler_in_the_digests_job(db_url: str, tmp_path: Path) -> None:
    backend = backend_of(db_url)
    markers = seed_lists(db_url)
    row = record(FaultRow("kill -9 scheduler (digests job)", backend))
    row.offered = len(markers)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTAPLUGIN_")}
    env.update(MTAPLUGIN_DATABASE_URL=db_url, MTAPLUGIN_SITE_VAR_DIR=str(tmp_path))
    argv = [sys.executable, "-m", "mtaplugin.cli", "jobs", "run", "digests"]
    engine = make_engine(db_url)
    sessions = sessionmaker_for(engine)
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    kills = 0
    try:

        def sent() -> int:
            with sessions() as s:
                query = select(func.count()).where(OutboxMessage.kind == "digest")
                return int(s.scalar(query.select_from(OutboxMessage)) or 0)

        at_kill: list[int] = []
        for run in range(RUNS):
            # kill once the run sent some of the digests left (a random share of them)
            before = sent()
            share = max(1, (LISTS - before) // (RUNS - run + 1))
            target = before + rng.randint(1, share)
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

            def reached(p: subprocess.Popen[bytes] = proc, n: int = target) -> bool:
                return p.poll() is not None or sent() >= n

            wait_for(reached, timeout=120, interval=0.01)
            time.sleep(rng.uniform(0, 0.05))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
                at_kill.append(sent())
            out = proc.communicate(timeout=30)[0].decode(errors="replace")
            if proc.returncode == 0:
                break
            assert proc.returncode == -signal.SIGKILL, out
            # the lease of the killed run runs out (10 minutes, not waited for here)
            with sessions.begin() as s:
                s.execute(
                    update(JobRun)
                    .where(JobRun.name == "digests")
                    .values(lease_until=datetime(2000, 1, 1, tzinfo=UTC))
                )
        with sessions() as s:
            waiting_before = s.scalar(select(func.count()).select_from(DigestEntry))
        final = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        assert final.returncode == 0, final.stdout + final.stderr
        with sessions() as s:
            waiting = s.scalar(select(func.count()).select_from(DigestEntry))
            digests = list(s.scalars(select(OutboxMessage).where(OutboxMessage.kind == "digest")))
            issues = Counter(s.scalars(select(MailingList.next_digest_number)))
    finally:
        engine.dispose()
    seen: Counter[str] = Counter()
    for d in digests:
        seen.update({m.decode() for m in MARKER.findall(d.raw)})
    row.accepted = len(markers)
    row.deferred = kills
    row.delivered = len(markers & set(seen))
    row.duplicates = sum(n - 1 for m, n in seen.items() if m in markers)
    row.lost = len(markers - set(seen))
    row.notes.append(
        f"{kills} kills (after {at_kill} of {LISTS} digests), {waiting_before} posts still "
        "waiting before the last run, "
        f"{len(digests)} digests, seed {seed}"
    )
    print(row.fault, row.backend, *row.notes)
    assert waiting == 0
    assert row.lost == 0, row
    assert row.duplicates == 0, row
    assert len(digests) == LISTS, row
    assert issues == {2: LISTS}, issues
