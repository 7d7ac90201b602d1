"""kill -9 of the milter in the middle of end of data, over a real Postfix.

A private Postfix with ``mtaplugin serve`` (its supervisor restarts what dies) takes posts
from a client that behaves as a sending MTA: a post answered 4xx, or whose connection
broke, is offered again until it gets a 250.  Between kills, ordinary posts flow; each run
then offers one post while a timer sends SIGKILL to the milter a random moment into the
transaction (before, during or after the decision at end of data).  Postfix's
``milter_default_action = tempfail`` (contrib/postfix/main.cf for list mail) turns a dead
milter into a 4xx.

Three kinds of post: to a list whose copy Postfix fans out (the milter edits the
recipients in place), to an anonymous list (the copy goes through the outbox, committed
before the 250), and from a nonmember (held).  Every accepted post reaches every member
and the archive (once: its journal row is committed with the decision, and the worker
fans it out); a held post is held.  The bound on duplicates (docs/reliability.md): none
for the posts fanned out in place (Postfix queues nothing it did not get an ACCEPT for);
a kill between the commit of an outbox copy or a hold and the reply can make that one
post go out (or be held) twice when the sender offers it again: at most one post per
kill.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.enums import OutboxStatus
from mtaplugin.manage import lists, members
from mtaplugin.model import AcceptedPost, ArchivedMessage, HeldMessage, OutboxMessage
from mtaplugin.supervisor import RESTART_HEALTHY
from mtaplugin.testing import wait_for
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailauth import lab_dns  # noqa: F401  (a pytest fixture)
from tests.conftest import BACKENDS
from tests.faults.ledger import RUNS, FaultRow, record
from tests.faults.procs import (
    DOMAIN,
    SLOW,
    backend_of,
    count_into,
    fault_lab,
    lab_database,
    offer,
    part_pid,
    require_root,
    settle,
    wait_restarted,
)

pytestmark = SLOW

MEMBERS = ("ann@example.com", "bob@example.net", "cy@example.org")
POSTER = MEMBERS[0]
OUTSIDER = "outsider@example.net"
#: seconds of ordinary posts before each kill: in a long run, what makes ``serve`` restart
#: the milter after 1 s every time
UPTIME = RESTART_HEALTHY + 0.5 if RUNS > 3 else 1.0
#: (the order the kills take them in)
KINDS = ("outbox", "in place", "held")
#: behind the shipped configuration also a list of 300 fanned out in place, so that kills
#: land while the milter hands Postfix its recipient edits (a long stream of them)
BIG = "in place 300"
BIG_MEMBERS = (*MEMBERS, *(f"member{n}@example.com" for n in range(297)))


@dataclass
class Lists:
    in_place: str
    outbox: str
    held: str
    big: str

    def address(self, kind: str) -> str:
        return {
            "in place": self.in_place,
            "outbox": self.outbox,
            "held": self.held,
            BIG: self.big,
        }[kind]


#: the plain lab on each backend; in a long run also the shipped configuration
SETUPS = [*BACKENDS, *(["debian"] if RUNS >= 10 else [])]


@pytest.fixture(scope="module", params=SETUPS)
def milter_lab(
    request: pytest.FixtureRequest,
    lab_root: Path,
    lab_dns: DnsServer,  # noqa: F811
) -> Iterator[tuple[Lab, Lists]]:
    require_root()
    debian = request.param == "debian"
    url = lab_database(request, lab_root, "sqlite" if debian else request.param)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        names = Lists(f"inplace@{DOMAIN}", f"anon@{DOMAIN}", f"moderated@{DOMAIN}", f"big@{DOMAIN}")
        for address in (names.in_place, names.outbox, names.held, names.big):
            mlist = lists.create(s, address)
            mlist.anonymous_list = address == names.outbox
            for m in BIG_MEMBERS if address == names.big else MEMBERS:
                members.add(s, mlist, m)
    engine.dispose()
    lab = fault_lab(lab_root / f"kill-milter-{request.param}", url, lab_dns, debian=debian)
    try:
        lab.start()
    except BaseException:
        lab.stop()
        raise
    yield lab, names
    lab.stop()


def unsent(lab: Lab) -> int:
    """Outbox rows not sent yet."""
    engine = make_engine(lab.database_url)
    try:
        with sessionmaker_for(engine)() as s:
            query = select(func.count()).where(OutboxMessage.status != OutboxStatus.sent)
            return int(s.scalar(query.select_from(OutboxMessage)) or 0)
    finally:
        engine.dispose()


def held_ids(url: str, markers: set[str]) -> dict[str, int]:
    """marker → how many held posts carry it."""
    engine = make_engine(url)
    try:
        with sessionmaker_for(engine)() as s:
            ids = s.scalars(select(HeldMessage.message_id)).all()
    finally:
        engine.dispose()
    found: dict[str, int] = {}
    for mid in ids:
        marker = mid.strip("<>").split("@", 1)[0]
        if marker in markers:
            found[marker] = found.get(marker, 0) + 1
    return found


def archived_markers(url: str, markers: set[str]) -> tuple[Counter[str], int]:
    """marker → how many times the archive keeps it, once the worker drained the journal
    of accepted posts; and the journal rows left (0)."""
    engine = make_engine(url)
    try:
        sessions = sessionmaker_for(engine)

        def journal() -> int:
            with sessions() as s:
                return int(s.scalar(select(func.count()).select_from(AcceptedPost)) or 0)

        with contextlib.suppress(TimeoutError):
            wait_for(lambda: journal() == 0, timeout=120)
        with sessions() as s:
            # by the subject's marker: an anonymous list's archive gets a Message-ID of its
            # own (the poster's is not kept)
            subjects = s.scalars(select(ArchivedMessage.subject)).all()
        left = journal()
    finally:
        engine.dispose()
    found = Counter(subject.split()[-1] for subject in subjects if subject.split())
    return Counter({m: n for m, n in found.items() if m in markers}), left


def test_kill_9_of_the_milter_at_end_of_data_loses_no_post(
    milter_lab: tuple[Lab, Lists],
) -> None:
    lab, names = milter_lab
    backend = backend_of(lab.database_url) + ("/debian" if lab.debian else "")
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    victims = (*KINDS, BIG) if lab.debian else KINDS
    rows = {k: FaultRow(f"kill -9 milter ({k})", backend) for k in victims}
    offered: dict[str, list[str]] = {k: [] for k in victims}
    latency: dict[str, list[float]] = {k: [] for k in victims}
    counter = iter(range(1_000_000))

    def sender(kind: str) -> str:
        return OUTSIDER if kind == "held" else POSTER

    def offer_post(kind: str, at_dot: Callable[[], object] | None = None) -> list[int]:
        marker = f"{backend}-{kind.replace(' ', '')}-{seed}-{next(counter)}"
        offered[kind].append(marker)
        to = names.address(kind)
        dot: list[float] = []

        def sent() -> None:
            dot.append(time.monotonic())
            if at_dot is not None:
                at_dot()

        replies = offer(lab.smtp_port, sender(kind), to, marker, rows[kind], at_dot=sent).replies
        if at_dot is None and replies == [250]:
            # how long end of data takes, unhurt (the kills are spread over it)
            latency[kind].append(time.monotonic() - dot[0])
        return replies

    for kind in victims * 3:
        offer_post(kind)

    milter = part_pid(lab, "milter")
    assert milter is not None
    up_since = time.monotonic()
    hit = dict.fromkeys(victims, 0)  # kills that cut a transaction (a 4xx or a broken one)
    kills = dict.fromkeys(victims, 0)
    # each backend starts elsewhere in the order, so that a short run covers more kinds
    offset = SETUPS.index(backend.replace("sqlite/", "")) * 2
    for run in range(RUNS):
        # Ordinary posts until the milter has run long enough to be restarted at once
        # (a short run lets the supervisor's back-off grow: 1 s, then 2 s).
        n = 0
        while time.monotonic() - up_since < UPTIME:
            offer_post(KINDS[n % len(KINDS)])
            n += 1
            time.sleep(0.2)
        kind = victims[(run + offset) % len(victims)]
        delay = rng.uniform(0.0, 1.5 * statistics.median(latency[kind][-10:]))
        killer = threading.Timer(delay, os.kill, (milter, signal.SIGKILL))
        replies = offer_post(kind, at_dot=killer.start)
        killer.join()
        kills[kind] += 1
        if replies[0] != 250:
            hit[kind] += 1
        milter = wait_restarted(lab, "milter", milter)
        up_since = time.monotonic()
        for other in KINDS:  # a post of each kind through the new milter
            offer_post(other)

    audience = {"in place": MEMBERS, "outbox": MEMBERS, BIG: BIG_MEMBERS}
    copied = [k for k in victims if k in audience]
    expected = {(mk, m) for k in copied for mk in offered[k] for m in audience[k]}
    got = settle(lab.sink, expected)
    if not expected <= set(got):
        # Not all there yet: on a loaded machine a post may still wait in Postfix's queue
        # (for the LMTP front end) or in the outbox.  Lost is what never comes once both
        # are empty.
        print("waiting:", lab.postfix.queue_size(), "in Postfix's queue,", unsent(lab), "unsent")
        with contextlib.suppress(TimeoutError):
            wait_for(lambda: not lab.postfix.queue_size() and not unsent(lab), timeout=300)
        got = settle(lab.sink, expected, timeout=30)
    for kind in copied:
        mine = {(mk, m) for mk in offered[kind] for m in audience[kind]}
        count_into(rows[kind], mine, {p: n for p, n in got.items() if p in mine})
    # Every post answered 250 reaches the archive (its journal row was committed with the
    # decision; the worker fanned it out), once: a post decided twice is a repeat there.
    answered = {mk for k in copied for mk in offered[k]}
    archived, journal_left = archived_markers(lab.database_url, answered)
    held = held_ids(lab.database_url, set(offered["held"]))
    rows["held"].delivered = len(held)
    rows["held"].duplicates = sum(n - 1 for n in held.values())
    rows["held"].lost = len(set(offered["held"]) - set(held))
    for kind in victims:
        rows[kind].notes.append(
            f"{kills[kind]} kills, {hit[kind]} cut a transaction; end of data "
            f"{statistics.median(latency[kind]):.3f} s; seed {seed}"
        )
        record(rows[kind])
        print(rows[kind].fault, backend, *rows[kind].notes)
    missing = sorted({mk for mk, _m in expected - set(got)})
    for mk in missing:  # what became of a post some member never got
        print("MISSING", mk, f"{sum(1 for p in got if p[0] == mk)} copies arrived")
        for line in (lab.mta_log() + lab.log()).splitlines():
            if mk in line or (lab.debian and "lmtp" in line and "mtaplugin" in line[:40]):
                print("   ", line[:300])
    context = (seed, rows, missing, lab.log()[-3000:])
    unarchived = sorted(answered - set(archived))
    print(f"archive: {len(archived)} of {len(answered)} posts, journal left {journal_left}")
    assert unarchived == [] and journal_left == 0, (unarchived, *context)
    assert max(archived.values()) == 1, context
    for kind in victims:
        assert rows[kind].lost == 0, context
        assert rows[kind].refused == 0, context
    if lab.debian:
        # Postfix accepts what the milter did not finish: the members added before the
        # kill have their copy, and the LMTP front end decides the post again (a kill in
        # the stream of recipient edits: those members get it twice, none is lost)
        assert rows["in place"].duplicates <= kills["in place"] * len(MEMBERS), context
        assert rows[BIG].duplicates <= kills[BIG] * len(BIG_MEMBERS), context
    else:
        # Postfix queues nothing it had no ACCEPT for: no duplicate when it fans out.
        assert rows["in place"].duplicates == 0, context
    # A kill after the commit and before the reply: that post once more, to each member.
    # (the shipped configuration answers 250 for the post the milter did not decide,
    # which the LMTP front end then decides: each kill counts)
    cut = kills if lab.debian else hit
    assert rows["outbox"].duplicates <= cut["outbox"] * len(MEMBERS), context
    assert rows["held"].duplicates <= cut["held"], context
