"""The outbox across ``kill -9``: real ``mtaplugin worker`` processes, an aiosmtpd sink for
the MTA's re-injection listener, SIGKILL at random moments (in an SMTP conversation with
the listener, in a commit, in a claim, between two chunks of one row).

Nothing may be lost; a kill may send again at most the one chunk whose 250 was in flight
(``outbox.max_recipients`` recipients), so the duplicated (message, recipient) pairs
are at most kills × max_recipients.  Runs on SQLite and on PostgreSQL.
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
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from mtaplugin import outbox
from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.enums import OutboxStatus
from mtaplugin.model import OutboxMessage
from mtaplugin.testing import free_port, wait_for
from mtaplugin.testing.sink import Sink
from tests.faults.ledger import RUNS, FaultRow, record
from tests.faults.procs import SLOW

pytestmark = SLOW

KILLS = max(3, RUNS)
ROWS = max(300, 60 * KILLS)
RECIPIENTS = 5
MAX_RECIPIENTS = 2  # three SMTP transactions per row
#: seconds per SMTP reply; the lease is 10 × this, so a killed worker's rows come back
#: after 5 s
TIMEOUT = 0.5
BATCH = 20

MESSAGE_ID = re.compile(rb"^Message-ID: <([^>]+)>", re.MULTILINE | re.IGNORECASE)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    db = make_engine(db_url)
    yield db
    db.dispose()


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink(free_port()).start()
    yield s
    s.stop()


def queue_rows(engine: Engine) -> set[tuple[str, str]]:
    """ROWS rows of RECIPIENTS each, every row its own Message-ID; the expected pairs."""
    expected = set()
    with sessionmaker_for(engine).begin() as s:
        for i in range(ROWS):
            mid = f"crash-{i}@outbox.test"
            people = [f"r{i}-{j}@example.com" for j in range(RECIPIENTS)]
            raw = (
                f"From: team-owner@lists.test\r\nTo: team@lists.test\r\n"
                f"Subject: notice {i}\r\nMessage-ID: <{mid}>\r\n\r\nNotice {i}.\r\n"
            ).encode()
            outbox.enqueue(s, "team-bounces@lists.test", people, raw)
            expected |= {(mid, p) for p in people}
    return expected


def received_pairs(sink: Sink) -> Counter[tuple[str, str]]:
    pairs: Counter[tuple[str, str]] = Counter()
    for m in list(sink.messages):
        found = MESSAGE_ID.search(m.data)
        assert found, m.data[:200]
        mid = found.group(1).decode()
        pairs.update((mid, r) for r in m.recipients)
    return pairs


def delivered_more(sink: Sink) -> Callable[[], bool]:
    """A condition: the sink received a transaction after this call."""
    before = len(sink.messages)
    return lambda: len(sink.messages) > before


def unfinished(engine: Engine) -> int:
    with sessionmaker_for(engine)() as s:
        return int(
            s.scalar(
                select(func.count())
                .select_from(OutboxMessage)
                .where(OutboxMessage.status != OutboxStatus.sent)
            )
            or 0
        )


class Workers:
    """``mtaplugin worker`` processes, each life logging to its own file."""

    def __init__(self, db_url: str, port: int, root: Path) -> None:
        self.root = root
        self.lives = 0
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MTAPLUGIN_")}
        self.env.update(
            MTAPLUGIN_DATABASE_URL=db_url,
            MTAPLUGIN_OUTBOX_HOST="127.0.0.1",
            MTAPLUGIN_OUTBOX_PORT=str(port),
            MTAPLUGIN_OUTBOX_MAX_RECIPIENTS=str(MAX_RECIPIENTS),
            MTAPLUGIN_OUTBOX_TIMEOUT=str(TIMEOUT),
            MTAPLUGIN_OUTBOX_BATCH_SIZE=str(BATCH),
            MTAPLUGIN_SITE_VAR_DIR=str(root / "var"),
        )
        self.running: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        self.lives += 1
        log = (self.root / f"worker-{self.lives}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "mtaplugin.cli", "worker"],
            env=self.env,
            cwd=self.root,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        self.running.append(proc)
        return proc

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.root.glob("worker-*.log"))
        )

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.poll() is None, f"the worker died by itself\n{self.logs()}"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
        self.running.remove(proc)

    def stop(self) -> list[int]:
        """SIGTERM: each worker finishes its chunk, gives its rows back and exits 0."""
        for proc in self.running:
            proc.terminate()
        codes = [proc.wait(15) for proc in self.running]
        self.running.clear()
        return codes

    def cleanup(self) -> None:
        for proc in self.running:
            proc.kill()
            proc.wait()


@pytest.fixture
def workers(db_url: str, sink: Sink, tmp_path: Path) -> Iterator[Workers]:
    w = Workers(db_url, sink.port, tmp_path)
    yield w
    w.cleanup()


def check_rows(engine: Engine) -> None:
    with sessionmaker_for(engine)() as s:
        rows = s.scalars(select(OutboxMessage)).all()
    assert len(rows) == ROWS
    for r in rows:
        assert (r.status, r.recipients, r.claimed_by, r.claimed_until) == (
            OutboxStatus.sent,
            [],
            None,
            None,
        ), r.last_error


def test_kill_9_loses_nothing_and_duplicates_at_most_the_chunk_in_flight(
    db_url: str, engine: Engine, sink: Sink, workers: Workers
) -> None:
    expected = queue_rows(engine)
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    started = time.monotonic()
    proc = workers.start()
    for _kill in range(KILLS):
        # Wait until this life delivers, then kill it a random moment later: in an SMTP
        # conversation, a commit, a claim, or between two of them.
        wait_for(delivered_more(sink), timeout=20)
        time.sleep(rng.uniform(0.0, 0.4))
        workers.kill(proc)
        proc = workers.start()
    killed_at = len(sink.messages)
    try:
        wait_for(lambda: unfinished(engine) == 0, timeout=40 + ROWS / 10, interval=0.1)
    except TimeoutError:
        pytest.fail(f"{unfinished(engine)} rows still not sent\n{workers.logs()}")
    assert workers.stop() == [0], workers.logs()

    got = received_pairs(sink)
    duplicated = sum(n - 1 for n in got.values())
    # Each kill sent again at most one chunk, of one message.
    messages_duplicated = len({mid for (mid, _rcpt), n in got.items() if n > 1})
    backend = db_url.split(":", 1)[0].split("+", 1)[0]
    print(
        f"\n{backend}: {ROWS} rows, {len(expected)} pairs, {len(sink.messages)} transactions "
        f"({killed_at} before the last kill), {KILLS} kills, {duplicated} duplicated pairs "
        f"in {messages_duplicated} messages, "
        f"{time.monotonic() - started:.1f} s, seed {seed}"
    )
    row = record(FaultRow("kill -9 worker (mid chunk)", backend))
    row.offered = row.accepted = ROWS  # the rows queued, each committed before its 250
    row.delivered = len(expected & set(got))
    row.duplicates = duplicated
    row.lost = len(expected - set(got))
    row.notes.append(f"{KILLS} kills, {len(expected)} copies, seed {seed}")
    assert set(got) - expected == set()
    assert expected - set(got) == set(), "lost"
    assert duplicated <= KILLS * MAX_RECIPIENTS, (seed, workers.logs())
    assert messages_duplicated <= KILLS, (seed, workers.logs())
    check_rows(engine)


def test_two_worker_processes_at_once_send_nothing_twice(
    engine: Engine, sink: Sink, workers: Workers
) -> None:
    expected = queue_rows(engine)
    workers.start()
    workers.start()
    try:
        wait_for(lambda: unfinished(engine) == 0, timeout=40 + ROWS / 10, interval=0.1)
    except TimeoutError:
        pytest.fail(f"{unfinished(engine)} rows still not sent\n{workers.logs()}")
    assert workers.stop() == [0, 0], workers.logs()
    got = received_pairs(sink)
    assert set(got) == expected
    assert [pair for pair, n in got.items() if n > 1] == []
    check_rows(engine)
    # Both took part: each logged passes that sent rows.
    for log in sorted(workers.root.glob("worker-*.log")):
        assert re.search(r"outbox: [1-9]\d* sent", log.read_text()), workers.logs()
