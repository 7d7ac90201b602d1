"""kill -9 of the worker while it drains the journal of accepted posts.

Posts are accepted (the engine decides them: each answered 250, its journal row committed)
while no worker runs, as when every process is killed right after the answers.  Then real
``mtaplugin worker`` processes drain the journal, each killed with SIGKILL a random moment
after it fanned out some of the posts (inside a batch, in a commit, between batches), and
started again.  Afterwards every post is in the archive once, and in exactly one place of
the digest's (the store, or one digest sent: the list's digest goes out every few posts,
inside the drain's batches), and the journal is empty.
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
from mtaplugin.enums import DeliveryMode
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import AcceptedPost, ArchivedMessage, DigestEntry, OutboxMessage
from mtaplugin.posting.verdict import Accept
from mtaplugin.testing import wait_for
from mtaplugin.vocabulary.envelope import Envelope
from tests.faults.ledger import RUNS, FaultRow, record
from tests.faults.procs import SLOW, backend_of, kill_workers_while, post

pytestmark = SLOW

POSTS = 300 if RUNS < 10 else 1500
LIST = "drain@lists.test"
MARKER = re.compile(rb"body (dr-\d+-\d+)")


def accept_posts(url: str, seed: int) -> set[str]:
    """The list (a regular member, a MIME-digest member, a digest every ~2 KiB) and POSTS
    posts accepted by the engine with no worker running; their markers."""
    engine = make_engine(url)
    sessions = sessionmaker_for(engine)
    with sessions.begin() as s:
        domains.create(s, "lists.test", "fault tests")
        mlist = lists.create(s, LIST)
        mlist.digest_size_threshold = 2
        members.add(s, mlist, "ann@example.com")
        members.add(s, mlist, "bob@example.net", delivery_mode=DeliveryMode.mime_digests)
    deciding = ListEngine(sessions)
    markers = set()
    for n in range(POSTS):
        marker = f"dr-{seed}-{n}"
        raw = post(marker, "ann@example.com", LIST, subject=f"post {n}")
        verdict = deciding.decide(Envelope("ann@example.com", [LIST], queue_id=marker), raw)
        assert isinstance(verdict, Accept), verdict
        markers.add(marker)
    engine.dispose()
    return markers


def test_kill_9_of_the_worker_while_it_drains_the_accepted_posts(
    db_url: str, tmp_path: Path
) -> None:
    backend = backend_of(db_url)
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    markers = accept_posts(db_url, seed)
    row = record(FaultRow("kill -9 worker (accepted posts' drain)", backend))
    row.offered = row.accepted = len(markers)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTAPLUGIN_")}
    env.update(
        MTAPLUGIN_DATABASE_URL=db_url,
        MTAPLUGIN_SITE_VAR_DIR=str(tmp_path),
        # nothing listens there: the outbox keeps the digests (counted in the database)
        MTAPLUGIN_OUTBOX_PORT="1",
    )
    argv = [sys.executable, "-m", "mtaplugin.cli", "worker"]
    engine = make_engine(db_url)
    sessions = sessionmaker_for(engine)

    def count(model: type) -> int:
        with sessions() as s:
            return int(s.scalar(select(func.count()).select_from(model)) or 0)

    try:
        at_kill = kill_workers_while(
            argv, env, lambda: count(ArchivedMessage), POSTS, rng, settle=0.2
        )
        kills = len(at_kill)
        # the last worker drains the rest and is stopped (SIGTERM) once the journal is empty
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: count(AcceptedPost) == 0, timeout=300, interval=0.1)
        finally:
            proc.send_signal(signal.SIGTERM)
            out = proc.communicate(timeout=60)[0].decode(errors="replace")
        with sessions() as s:
            archived = Counter(
                mid.strip("<>").split("@", 1)[0]
                for mid in s.scalars(select(ArchivedMessage.message_id))
            )
            waiting = [e.raw for e in s.scalars(select(DigestEntry))]
            sent = [
                d.raw
                for d in s.scalars(select(OutboxMessage).where(OutboxMessage.kind == "digest"))
            ]
    finally:
        engine.dispose()
    digest: Counter[str] = Counter()
    for raw in [*waiting, *sent]:
        digest.update(m.decode() for m in MARKER.findall(raw))
    row.deferred = kills
    row.delivered = len(markers & set(archived))
    row.duplicates = sum(n - 1 for m, n in archived.items() if m in markers) + sum(
        n - 1 for m, n in digest.items() if m in markers
    )
    row.lost = len(markers - set(archived)) + len(markers - set(digest))
    row.notes.append(
        f"{kills} kills (after {at_kill} of {POSTS} archived), {len(sent)} digests sent, "
        f"{len(waiting)} posts waiting for the next, seed {seed}"
    )
    print(row.fault, row.backend, *row.notes)
    assert row.lost == 0, (row, out[-3000:])
    assert row.duplicates == 0, (row, out[-3000:])
    assert "Traceback" not in out, out[-3000:]
