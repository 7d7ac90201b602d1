"""Mass subscribe with the notices on (a welcome to each new member, one owners' notice
naming them all), against the same mass subscribe with them off (the baseline, in the
same run): the cost of a notice per new member.

Issue 31 asks that 10 000 addresses with notices on take seconds, not minutes.  Each round
subscribes ``--members`` new addresses to a fresh list on SQLite (``--postgres``: a
throw-away PostgreSQL), with Mailman's default welcome (a notice rendered from its
template and queued in the outbox for each new member) and the owners' notice, then as
many other new addresses to another list with the notices off; each round checks that
the outbox holds a welcome per member and one owners' notice (Mailman 2.1's mass
subscription), not one per address.  The two take turns (which goes first alternates)
for ``--rounds`` rounds (at least 5 for a median worth the name), after a small untimed
round of each (the first notice of a process loads the catalogs and compiles the
templates).  Prints each round, then the medians (with the lowest and highest round), the
ratio on/off per round, and seconds per 10 000.  ``--profile`` prints where one round with
notices spends its time (cProfile, cumulative).

    .venv/bin/python bench/mass_subscribe.py [--members 1000] [--rounds 5] [--postgres]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import select

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.enums import MemberRole
from mtaplugin.manage import domains, lists, members
from mtaplugin.manage.subscriptions.subscribe import mass_subscribe
from mtaplugin.model import OutboxMessage
from mtaplugin.testing.benchreport import Spread
from mtaplugin.testing.postgres import PostgresServer

DOMAIN = "lists.bench"
OWNER = f"owner@{DOMAIN}"


def one_round(url: str, n: int, round_no: int, notices: bool) -> float:
    """Seconds to mass-subscribe ``n`` new addresses to a fresh list with an owner, with
    the welcomes and the owners' notice (``notices``) or neither; then checks what the
    outbox got: a welcome per member and one owners' notice for them all (Mailman 2.1)."""
    engine = make_engine(url)
    sessions = sessionmaker_for(engine)
    tag = f"{'on' if notices else 'off'}{round_no}"
    name = f"{tag}@{DOMAIN}"
    # new addresses for each list: each round creates its addresses and their users
    entries = [(f"m{tag}-{i}@members.bench", f"Member {i}") for i in range(n)]
    try:
        with sessions.begin() as s:
            members.add(s, lists.create(s, name), OWNER, MemberRole.owner)
        started = time.perf_counter()
        with sessions.begin() as s:
            done = mass_subscribe(
                s, lists.get(s, name), entries, send_welcome_message=notices,
                send_admin_notice=notices,
            )  # fmt: skip
        seconds = time.perf_counter() - started
        assert len(done.added) == n, done
        with sessions() as s:
            rows = s.execute(
                select(OutboxMessage.recipients).where(
                    OutboxMessage.mailing_list_id == lists.get(s, name).id
                )
            ).scalars()
            sent = Counter("owners" if r == [OWNER] else "members" for r in rows)
        assert sent == (Counter(members=n, owners=1) if notices else Counter()), sent
        return seconds
    finally:
        engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", "--addresses", dest="members", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-mass-", dir="/tmp"))
    os.chmod(root, 0o755)  # the postgres user (root runs it as postgres) goes through it
    server = None
    try:
        if args.postgres:
            server = PostgresServer(root / "pg").start()
            server.execute("CREATE DATABASE bench")
            url = server.url("bench")
        else:
            url = f"sqlite:///{root}/bench.db"
        upgrade(url)
        engine = make_engine(url, sqlite_wal=True)
        with sessionmaker_for(engine).begin() as s:
            domains.create(s, DOMAIN)
        engine.dispose()
        # the first notice of a process loads the catalogs and compiles the templates:
        # not what a round measures
        one_round(url, 20, 0, notices=True)
        one_round(url, 20, 0, notices=False)
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            one_round(url, args.members, -1, notices=True)
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
            return 0
        on: list[float] = []
        off: list[float] = []
        for r in range(1, args.rounds + 1):
            # the two take turns, and which goes first alternates
            for notices in (True, False) if r % 2 else (False, True):
                (on if notices else off).append(one_round(url, args.members, r, notices))
            print(
                f"  round {r}/{args.rounds}: {args.members} members, notices on "
                f"{on[-1]:.2f} s, off {off[-1]:.2f} s, on/off {on[-1] / off[-1]:.2f}",
                flush=True,
            )
        with_notices, without = Spread.of(on), Spread.of(off)
        ratios = Spread.ratios(on, off)
        per = 10_000 / args.members
        backend = "PostgreSQL" if args.postgres else "SQLite"
        print(
            f"mass_subscribe, {backend}: {args.members} members x {args.rounds} rounds"
            " (median [lowest-highest])\n"
            f"  notices on:  {with_notices.text()} s"
            f" ({with_notices.median * per:.1f} s per 10 000)\n"
            f"  notices off: {without.text()} s ({without.median * per:.1f} s per 10 000)\n"
            f"  on / off: {ratios.text()}"
        )
        return 0
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
