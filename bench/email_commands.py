"""What an email command costs the milter, against a post, in the same run.

Each message goes through ``ListEngine.decide`` (what the milter calls at end of message) on
the same database: a member's post to a 10-member list (the baseline), a ``help`` to
-request (a translated reply rendered and put in the outbox), a ``who``, and a join +
confirmation round trip (two messages: the pending request and its notice, then the
member, the welcome and the audit entry).  It prints messages per second and the ratio to
the baseline.

    .venv/bin/python bench/email_commands.py [--messages 300] [--postgres]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select

from mtaplugin.commands.mail import CommandPolicy
from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.engine import ListEngine
from mtaplugin.enums import RosterVisibility
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import OutboxMessage
from mtaplugin.testing.benchdb import bench_database
from mtaplugin.vocabulary.envelope import Envelope

HOST = "lists.bench"


def message(sender: str, to: str, subject: str, n: int, body: str = "Hello.\r\n") -> bytes:
    return (
        f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\n"
        f"Message-ID: <cmd-{n}-{time.monotonic_ns()}@bench.example>\r\n\r\n{body}"
    ).encode()


def rate(count: int, fn: Callable[[int], None]) -> float:
    start = time.perf_counter()
    for n in range(count):
        fn(n)
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-cmd-"))
    os.chmod(root, 0o755)  # the postgres user starts its server below it
    url, server = bench_database(root, args.postgres)
    try:
        upgrade(url)
        sessions = sessionmaker_for(make_engine(url))
        with sessions.begin() as s:
            domains.create(s, HOST)
            mlist = lists.create(s, f"team@{HOST}")
            mlist.member_roster_visibility = RosterVisibility.public
            for i in range(10):
                members.add(s, mlist, f"member{i}@bench.example")
        # Replies are capped per sender and day: every sender is new here.
        engine = ListEngine(sessions, command_policy=CommandPolicy(replies_per_day=10**6))
        post_to = f"team@{HOST}"
        request = f"team-request@{HOST}"

        def post(n: int) -> None:
            env = Envelope(mail_from="member0@bench.example", recipients=[f"<{post_to}>"])
            engine.decide(env, message("member0@bench.example", post_to, f"post {n}", n))

        def command(word: str) -> Callable[[int], None]:
            def run(n: int) -> None:
                sender = f"{word}{n}@asker.example"
                env = Envelope(mail_from=sender, recipients=[f"<{request}>"])
                engine.decide(env, message(sender, request, word, n))

            return run

        def join_and_confirm(n: int) -> None:
            sender = f"joiner{n}@new.example"
            env = Envelope(mail_from=sender, recipients=[f"<{request}>"])
            engine.decide(env, message(sender, request, "subscribe", n))
            with sessions() as s:
                raw = s.scalars(
                    select(OutboxMessage.raw).order_by(OutboxMessage.id.desc()).limit(1)
                ).one()
            token = re.search(rb"confirm\+([0-9a-f]{40})@", raw)
            assert token is not None
            confirm = f"team-confirm+{token.group(1).decode()}@{HOST}"
            env = Envelope(mail_from=sender, recipients=[f"<{confirm}>"])
            engine.decide(env, message(sender, confirm, "Re: confirm", n))

        count = args.messages
        post(0)  # warm the snapshot cache and the templates
        command("help")(0)
        baseline = rate(count, post)
        print(f"backend {'postgresql' if args.postgres else 'sqlite'}, {count} messages each")
        print(f"  member post (baseline)     {baseline:8.0f} msg/s")
        for label, fn, per in (
            ("help -> reply", command("help"), 1),
            ("who -> reply", command("who"), 1),
            ("join + confirm (2 msgs)", join_and_confirm, 2),
        ):
            r = rate(count // per, fn) * per
            print(f"  {label:26} {r:8.0f} msg/s   ratio to a post {r / baseline:5.2f}")
        engine.close()
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
