"""kill -9 of the REST API, and of ``mtaplugin members add``, in the middle of a mass
subscribe.

REST: a client subscribes addresses one ``POST /3.1/members`` at a time (as Postorius's
mass subscription does) while the whole API (gunicorn and its worker) is killed with
SIGKILL at random moments and started again; the client sends again every request whose
answer it did not get (a 409 "already subscribed" then means the first one was done).
Every fourth address must confirm: it gets one pending request and one message asking
to confirm, and does not become a member.  CLI: ``members add --file`` of a few thousand
addresses killed in the middle, then run again.  Afterwards every other address is a
member exactly once, has one address row, one ``member.subscribe`` audit entry and one
welcome message in the outbox: nothing is half written, nothing twice.
"""

from __future__ import annotations

import base64
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.manage import domains, lists
from mtaplugin.model import Address, AuditEntry, Member, OutboxMessage, PendingRequest
from mtaplugin.testing import free_port, wait_for_port
from tests.faults.ledger import RUNS, FaultRow, record
from tests.faults.procs import SLOW, backend_of

pytestmark = SLOW

LIST = "mass@lists.test"
LIST_ID = "mass.lists.test"
#: addresses in one ``members add --file`` (each new member's welcome is rendered: ~20 ms)
ADDED = 3000 if RUNS >= 10 else 300
AUTH = "Basic " + base64.b64encode(b"admin:s3cret").decode()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    db = make_engine(db_url)
    with sessionmaker_for(db).begin() as s:
        domains.create(s, "lists.test", "fault tests")
        lists.create(s, LIST)
    yield db
    db.dispose()


def environ(db_url: str, root: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTAPLUGIN_")}
    env.update(
        MTAPLUGIN_DATABASE_URL=db_url,
        MTAPLUGIN_API_LISTEN=f"127.0.0.1:{port}",
        MTAPLUGIN_SITE_VAR_DIR=str(root),
        MTAPLUGIN_API_ADMIN_USER="admin",
        MTAPLUGIN_API_ADMIN_PASSWORD="s3cret",
        MTAPLUGIN_API_WORKERS="1",
    )
    return env


class Api:
    """``mtaplugin api`` in a session of its own: killed whole (SIGKILL to the group)."""

    def __init__(self, db_url: str, root: Path) -> None:
        self.port = free_port()
        self.env = environ(db_url, root, self.port)
        self.root = root
        self.process: subprocess.Popen[bytes] | None = None
        self.lives = 0

    def start(self) -> None:
        self.lives += 1
        log = (self.root / f"api-{self.lives}.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mtaplugin.cli", "api"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        wait_for_port(self.port, timeout=60)

    def kill(self) -> None:
        assert self.process is not None and self.process.poll() is None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(15)


def subscribe(port: int, email: str) -> int:
    """One POST /members; its status (0: no answer).  An address at example.org must
    confirm (a pending request and a confirmation message), the others are subscribed."""
    confirmed = "false" if email.endswith("@example.org") else "true"
    data = urllib.parse.urlencode(
        {
            "list_id": LIST_ID,
            "subscriber": email,
            "pre_verified": "true",
            "pre_confirmed": confirmed,
            "pre_approved": "true",
        }
    ).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/3.1/members", data=data)
    req.add_header("Authorization", AUTH)
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def check_roster(engine: Engine, emails: list[str], row: FaultRow) -> None:
    """Each address a member once, one address row, one audit entry, one welcome."""
    with sessionmaker_for(engine)() as s:
        members = Counter(
            s.scalars(
                select(Address.email)
                .join(Member, Member.address_id == Address.id)
                .where(Member.mailing_list_id.is_not(None))
            )
        )
        addresses = Counter(s.scalars(select(Address.email)))
        audits = Counter(
            str(e.detail.get("email", "")) or e.actor
            for e in s.scalars(select(AuditEntry).where(AuditEntry.action == "member.subscribe"))
        )
        welcomes: Counter[str] = Counter()
        for o in s.scalars(select(OutboxMessage)):
            if b"Welcome" in o.raw or b"welcome" in o.raw:
                welcomes.update(o.recipients)
    wanted = set(emails)
    row.delivered = len(wanted & set(members))
    row.lost = len(wanted - set(members))
    row.duplicates = sum(n - 1 for e, n in members.items() if e in wanted)
    row.notes.append(
        f"address rows {sum(addresses[e] for e in wanted)}, audit entries "
        f"{sum(audits[e] for e in wanted)}, welcomes {sum(welcomes[e] for e in wanted)}"
    )
    print(row.fault, row.backend, *row.notes)
    assert set(members) == wanted, row
    assert all(members[e] == 1 for e in wanted), row
    assert all(addresses[e] == 1 for e in wanted), row
    assert {e: audits[e] for e in wanted if audits[e] != 1} == {}, (row, list(audits.items())[:5])
    assert {e: welcomes[e] for e in wanted if welcomes[e] > 1} == {}, row


def check_pending(engine: Engine, emails: list[str], row: FaultRow) -> None:
    """Each address one pending request and one message (asking to confirm), no member."""
    with sessionmaker_for(engine)() as s:
        pending = Counter(s.scalars(select(PendingRequest.email)))
        sent: Counter[str] = Counter()
        for o in s.scalars(select(OutboxMessage)):
            sent.update(o.recipients)
        members = set(
            s.scalars(select(Address.email).join(Member, Member.address_id == Address.id))
        )
    wanted = set(emails)
    row.delivered += len(wanted & set(pending))
    row.lost += len(wanted - set(pending))
    row.duplicates += sum(pending[e] - 1 for e in wanted if pending[e] > 1)
    row.notes.append(f"pending {len(emails)}: messages {sum(sent[e] for e in wanted)}")
    print(row.fault, row.backend, *row.notes)
    assert {e: pending[e] for e in wanted if pending[e] != 1} == {}, row
    assert {e: sent[e] for e in wanted if sent[e] != 1} == {}, row
    assert wanted & members == set(), row


def test_kill_9_of_the_api_in_a_mass_subscribe_via_rest(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    backend = backend_of(db_url)
    # every fourth must confirm: a pending request, not a member
    emails = [f"p{i}@example.{'org' if i % 4 == 3 else 'com'}" for i in range(60 * RUNS)]
    confirming = [e for e in emails if e.endswith("@example.org")]
    row = record(FaultRow("kill -9 API (REST mass subscribe)", backend))
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    api = Api(db_url, tmp_path)
    api.start()
    statuses: Counter[int] = Counter()
    done = threading.Event()

    def client() -> None:
        for email in emails:
            row.offered += 1
            while True:
                status = subscribe(api.port, email)
                statuses[status] += 1
                if status in (201, 202, 409):
                    row.accepted += 1
                    break
                assert status in (0, 500, 502, 503), (email, status)
                row.deferred += 1
                time.sleep(0.2)
        done.set()

    worker = threading.Thread(target=client, daemon=True)
    worker.start()
    try:
        for _ in range(RUNS):
            time.sleep(rng.uniform(0.5, 2.0))
            if done.is_set():
                break
            api.kill()
            api.start()
        assert done.wait(300), "the client did not finish"
    finally:
        api.stop()
    row.notes.append(f"replies {dict(statuses)}, API lives {api.lives}, seed {seed}")
    check_roster(engine, [e for e in emails if e not in confirming], row)
    check_pending(engine, confirming, row)
    # a 409 only after a lost 201 or 202
    assert statuses[201] + statuses[202] >= len(emails) - RUNS, statuses


def test_kill_9_of_members_add_in_a_mass_subscribe(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    backend = backend_of(db_url)
    emails = [f"m{i}@example.net" for i in range(ADDED)]
    listing = tmp_path / "addresses.txt"
    listing.write_text("\n".join(emails) + "\n")
    row = record(FaultRow(f"kill -9 members add ({ADDED})", backend))
    row.offered = len(emails)
    env = environ(db_url, tmp_path, free_port())
    argv = [sys.executable, "-m", "mtaplugin.cli", "members", "add", LIST, "--file"]
    argv += [str(listing), "--quiet"]
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    kills = 0
    for _ in range(RUNS):
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        time.sleep(rng.uniform(0.5, 3.0))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(30)
        row.deferred += 1
    final = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stdout + final.stderr
    row.accepted = len(emails)
    row.notes.append(f"{kills} kills, seed {seed}")
    check_roster(engine, emails, row)
