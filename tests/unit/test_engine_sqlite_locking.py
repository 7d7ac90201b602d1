"""End-of-message decisions on one SQLite file (rollback journal) while others write: a
decision that stores something waits for the other writer (SQLite's busy handler, up to
``[database] timeout``) and never answers 451 for a lock it could have waited for.

SQLite answers "database is locked" at once, without waiting, to a connection that already
read inside a transaction and then wants to write while another connection holds the write
lock (its deadlock avoidance, see ``sqlite3_busy_handler``).  These tests fail if a
decision's writes ever follow a read in the same SQLite transaction."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.engine import ListEngine
from mtaplugin.enums import MemberRole
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import AcceptedPost, BounceEvent, HeldMessage, OutboxMessage
from mtaplugin.posting.verdict import TempFail, Verdict
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import make_post

HOST = "lock.test"
LIST = f"team@{HOST}"
#: generous: only a lock SQLite refuses to wait for can make a decision fail here
TIMEOUT = 60.0


def list_database(sqlite_url: str, timeout: float) -> tuple[Engine, sessionmaker[Session]]:
    """The test list (two members, an owner) on a SQLite file whose busy timeout is
    ``timeout`` seconds."""
    db = make_engine(sqlite_url, timeout=timeout)
    factory = sessionmaker_for(db)
    with factory.begin() as s:
        domains.create(s, HOST)
        team = lists.create(s, LIST)
        for who in ("anne@example.com", "bob@example.com"):
            members.add(s, team, who)
        members.add(s, team, "olive@example.com", MemberRole.owner)
    return db, factory


def hold_write_lock(sqlite_url: str) -> sqlite3.Connection:
    """Another connection that holds the write lock (RESERVED) until it commits."""
    locker = sqlite3.connect(
        sqlite_url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False
    )
    locker.execute("BEGIN IMMEDIATE")
    locker.execute("UPDATE domains SET description = description")
    return locker


@pytest.fixture
def sessions(sqlite_url: str) -> Iterator[sessionmaker[Session]]:
    db, factory = list_database(sqlite_url, TIMEOUT)
    yield factory
    db.dispose()


def bounce(n: int) -> bytes:
    return (
        f"From: MAILER-DAEMON@mx.example.com\r\nTo: team-bounces@{HOST}\r\n"
        f"Subject: Undelivered Mail\r\nMessage-ID: <dsn{n}@mx.example.com>\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n'
        "--b\r\nContent-Type: text/plain\r\n\r\nNot delivered.\r\n\r\n"
        "--b\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.example.com\r\n\r\n"
        f"Final-Recipient: rfc822; gone{n}@example.com\r\nAction: failed\r\n"
        "Status: 5.1.1\r\n\r\n--b--\r\n"
    ).encode()


def mail(kind: str, n: int) -> tuple[Envelope, bytes]:
    """A decision that stores something: a member post (its journal row, for the
    archive), a held nonmember post (and its sender on the nonmember roster), an email
    command, a bounce."""
    if kind == "member":
        sender, rcpt, raw = "anne@example.com", LIST, make_post("anne@example.com", LIST)
    elif kind == "nonmember":
        sender, rcpt = f"stranger{n}@example.net", LIST
        raw = make_post(sender, LIST)
    elif kind == "command":
        sender, rcpt = f"asker{n}@example.net", f"team-request@{HOST}"
        raw = make_post(sender, rcpt, subject="help", body="help\n")
    else:
        sender, rcpt, raw = "", f"team-bounces@{HOST}", bounce(n)
    envelope = Envelope(
        mail_from=sender,
        recipients=[f"<{rcpt}>"],
        client_address="192.0.2.1",
        helo="client.test",
        queue_id=f"Q{n}",
    )
    return envelope, raw


KINDS = ("member", "nonmember", "command", "bounce")


def stored(sessions: sessionmaker[Session]) -> dict[str, int]:
    with sessions() as s:
        return {
            "accepted": s.scalar(select(func.count()).select_from(AcceptedPost)) or 0,
            "held": s.scalar(select(func.count()).select_from(HeldMessage)) or 0,
            "outbox": s.scalar(select(func.count()).select_from(OutboxMessage)) or 0,
            "bounces": s.scalar(select(func.count()).select_from(BounceEvent)) or 0,
        }


@pytest.mark.parametrize("kind", KINDS)
def test_a_decision_waits_for_another_writer(
    sessions: sessionmaker[Session], sqlite_url: str, kind: str
):
    """Another connection holds the write lock (RESERVED) when the decision starts and
    lets go a moment later: the decision waits for it and stores its effects."""
    engine = ListEngine(sessions, site_owner="postmaster@site.test")
    engine.decide(*mail(kind, 0))  # warm: the list's snapshot, the statements' caches
    before = stored(sessions)
    locker = hold_write_lock(sqlite_url)
    release = threading.Timer(1.0, lambda: locker.execute("COMMIT"))
    release.start()
    try:
        verdict = engine.decide(*mail(kind, 1))
    finally:
        release.join()
        locker.close()
    assert not isinstance(verdict, TempFail), verdict
    after = stored(sessions)
    assert after != before  # it stored what the decision stores


def test_concurrent_decisions_never_fail_on_a_lock(sessions: sessionmaker[Session]):
    """Several threads (the milter's) decide storing posts at once on one SQLite file:
    with a generous busy timeout, none answers 451."""
    engine = ListEngine(sessions, site_owner="postmaster@site.test")
    threads, each = 8, 6
    verdicts: list[Verdict] = []
    lock = threading.Lock()

    def work(t: int) -> None:
        for i in range(each):
            n = each * t + i
            verdict = engine.decide(*mail(KINDS[n % len(KINDS)], n))
            with lock:
                verdicts.append(verdict)

    started = time.monotonic()
    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    failed = [v for v in verdicts if isinstance(v, TempFail)]
    assert len(verdicts) == threads * each
    assert failed == [], f"{len(failed)} of {len(verdicts)} in {time.monotonic() - started:.1f}s"
    kinds = [KINDS[n % len(KINDS)] for n in range(threads * each)]
    counts = stored(sessions)
    assert counts["held"] == kinds.count("nonmember")
    assert counts["accepted"] == kinds.count("member")
    assert counts["bounces"] == kinds.count("bounce")


def test_a_decision_refused_the_lock_is_decided_again(sqlite_url: str, caplog):
    """With a short ``[database] timeout`` the first attempt gives up on the lock
    ("database is locked"); the decision is rolled back and made again in a new
    transaction, which gets the lock once the other writer commits: no 451, stored once.
    The other writer commits when the engine says it decides again (not on a timer, which
    a loaded machine can fire after every retry has given up)."""
    db, sessions = list_database(sqlite_url, 0.3)
    engine = ListEngine(sessions, site_owner="postmaster@site.test")
    engine.decide(*mail("member", 0))
    before = stored(sessions)
    locker = hold_write_lock(sqlite_url)

    class ReleaseOnRetry(logging.Handler):
        released = False

        def emit(self, record: logging.LogRecord) -> None:
            if "deciding again" in record.getMessage() and not self.released:
                self.released = True
                locker.execute("COMMIT")

    release = ReleaseOnRetry()
    logging.getLogger("mtaplugin.engine").addHandler(release)
    try:
        with caplog.at_level("WARNING", logger="mtaplugin.engine"):
            verdict = engine.decide(*mail("member", 1))
    finally:
        logging.getLogger("mtaplugin.engine").removeHandler(release)
        if not release.released:
            locker.execute("COMMIT")
        locker.close()
        db.dispose()
    assert release.released  # the first attempt was refused the lock
    assert not isinstance(verdict, TempFail), verdict
    after = stored(sessions)
    assert after["accepted"] == before["accepted"] + 1


def test_a_lock_held_past_every_retry_is_a_451(sqlite_url: str):
    """A lock held longer than every attempt's wait: 451 (the sender retries), nothing
    stored."""
    db, sessions = list_database(sqlite_url, 0.1)
    engine = ListEngine(sessions, site_owner="postmaster@site.test")
    engine.decide(*mail("member", 0))
    before = stored(sessions)
    locker = hold_write_lock(sqlite_url)
    try:
        verdict = engine.decide(*mail("member", 1))
    finally:
        locker.execute("COMMIT")
        locker.close()
    assert isinstance(verdict, TempFail), verdict
    assert "4.3.0" in str(verdict)
    assert stored(sessions) == before
    db.dispose()
