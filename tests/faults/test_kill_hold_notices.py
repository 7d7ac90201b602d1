"""kill -9 of the worker while it makes the notices of held posts.

Nonmembers' posts are held (the engine decides them: each answered, its held row committed
with ``notices_due``) while no worker runs.  Then real ``mtaplugin worker`` processes make
the notices, each killed with SIGKILL a random moment after it made some (inside a batch,
in a commit, between batches), and started again.  Afterwards every held post has exactly
one moderators' notice in the outbox and one moderators' token, and none waits.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from sqlalchemy import func, select

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.engine import ListEngine
from mtaplugin.enums import MemberRole
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import HeldMessage, OutboxMessage, PendingRequest
from mtaplugin.posting.verdict import Discard
from mtaplugin.testing import wait_for
from mtaplugin.vocabulary.envelope import Envelope
from tests.faults.ledger import RUNS, FaultRow, record
from tests.faults.procs import SLOW, backend_of, kill_workers_while, post

pytestmark = SLOW

POSTS = 200 if RUNS < 10 else 800
LIST = "held@lists.test"
MARKER = re.compile(rb"body (hn-\d+-\d+)")


def hold_posts(url: str, seed: int) -> set[str]:
    """The list (a member, an owner) and POSTS nonmembers' posts held by the engine with no
    worker running; their markers."""
    engine = make_engine(url)
    sessions = sessionmaker_for(engine)
    with sessions.begin() as s:
        domains.create(s, "lists.test", "fault tests")
        mlist = lists.create(s, LIST)
        members.add(s, mlist, "ann@example.com")
        members.add(s, mlist, "own@example.com", MemberRole.owner)
    deciding = ListEngine(sessions)
    markers = set()
    for n in range(POSTS):
        marker = f"hn-{seed}-{n}"
        sender = f"stranger{n}@example.net"
        raw = post(marker, sender, LIST, subject=f"held {n}")
        verdict = deciding.decide(Envelope(sender, [LIST], queue_id=marker), raw)
        assert isinstance(verdict, Discard), verdict
        markers.add(marker)
    engine.dispose()
    return markers


def test_kill_9_of_the_worker_while_it_makes_hold_notices(db_url: str, tmp_path: Path) -> None:
    backend = backend_of(db_url)
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    markers = hold_posts(db_url, seed)
    row = record(FaultRow("kill -9 worker (hold notices)", backend))
    row.offered = row.accepted = len(markers)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTAPLUGIN_")}
    env.update(
        MTAPLUGIN_DATABASE_URL=db_url,
        MTAPLUGIN_SITE_VAR_DIR=str(tmp_path),
        # nothing listens there: the outbox keeps the notices (counted in the database)
        MTAPLUGIN_OUTBOX_PORT="1",
    )
    argv = [sys.executable, "-m", "mtaplugin.cli", "worker"]
    engine = make_engine(db_url)
    sessions = sessionmaker_for(engine)

    def waiting() -> int:
        with sessions() as s:
            query = select(func.count(HeldMessage.id)).where(HeldMessage.notices_due.is_(True))
            return int(s.scalar(query) or 0)

    def notices() -> int:
        """The held posts whose notices are made (the worker's daily reminder of what
        waits is a notice too, so the outbox is not counted)."""
        return POSTS - waiting()

    try:
        at_kill = kill_workers_while(argv, env, notices, POSTS, rng, settle=0.1)
        kills = len(at_kill)
        # the last worker makes the rest and is stopped (SIGTERM) once none waits
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: waiting() == 0, timeout=300, interval=0.1)
        finally:
            proc.send_signal(signal.SIGTERM)
            out = proc.communicate(timeout=60)[0].decode(errors="replace")
        with sessions() as s:
            told: Counter[str] = Counter()
            for raw, to in s.execute(
                select(OutboxMessage.raw, OutboxMessage.recipients).where(
                    OutboxMessage.kind == "notice"
                )
            ):
                assert to == ["own@example.com"], to
                # (the pending-reminders job's notice names no post)
                told.update(m.decode() for m in MARKER.findall(raw))
            held = int(s.scalar(select(func.count(HeldMessage.id))) or 0)
            tokens = int(s.scalar(select(func.count(PendingRequest.id))) or 0)
    finally:
        engine.dispose()
    row.deferred = kills
    row.delivered = len(markers & set(told))
    row.duplicates = sum(n - 1 for m, n in told.items() if m in markers)
    row.lost = len(markers - set(told))
    row.notes.append(
        f"{kills} kills (after {at_kill} of {POSTS} notices), {held} held, {tokens} tokens, "
        f"seed {seed}"
    )
    print(row.fault, row.backend, *row.notes)
    assert held == POSTS
    assert row.lost == 0, (row, out[-3000:])
    assert row.duplicates == 0, (row, out[-3000:])
    assert tokens == POSTS, row  # one moderators' token a post: none made twice, none kept
    assert "Traceback" not in out, out[-3000:]
