"""What a digest costs: building and queuing one MIME digest of 200 posts for 10 000 digest
members, against queuing the same 200 posts as regular copies for 10 000 members; and what
keeping a post for the digest adds to the milter's decision.

1. **Digest**: 200 posts (about 2 KiB each, as the archive keeps them) wait in the digest
   store of a list with 10 000 MIME-digest members; ``digests.send`` builds the digest,
   removes the posts and puts it in the outbox, in one committed transaction.
2. **Regular**: the same 200 posts, each made into the members' copy
   (``transforms.members_copy``) and put in the outbox for the 10 000 members, one
   committed transaction each (what a post to a list that goes through the outbox costs).
3. **Hot path**: ``ListEngine.decide`` of a post to a 10-member list, without and with one
   digest member (then each post is also transformed into its archive copy and stored).

    .venv/bin/python bench/digests.py [--members 10000] [--posts 200] [--postgres]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select

from mtaplugin import outbox
from mtaplugin.copies import paths, transforms
from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.digests import send, store
from mtaplugin.engine import ListEngine
from mtaplugin.enums import DeliveryMode
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import OutboxMessage
from mtaplugin.posting.verdict import Accept
from mtaplugin.testing.benchdb import bench_database
from mtaplugin.vocabulary.envelope import Envelope

HOST = "lists.bench"
PARAGRAPH = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor\r\n"
    "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud\r\n"
)


def post(n: int, to: str, sender: str = "") -> bytes:
    sender = sender or f"Poster {n} <poster{n}@bench.example>"
    return (
        f"From: {sender}\r\nTo: {to}\r\n"
        f"Subject: bench post number {n}\r\nDate: Fri, 04 Dec 2026 09:00:00 +0000\r\n"
        f"Message-ID: <digest-{n}-{time.monotonic_ns()}@bench.example>\r\n"
        "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + PARAGRAPH * 12
    ).encode()


def step(text: str) -> None:
    print(f"  ... {text}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--posts", type=int, default=200)
    parser.add_argument("--decisions", type=int, default=300)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-digests-"))
    os.chmod(root, 0o755)  # the postgres user starts its server below it
    url, server = bench_database(root, args.postgres)
    try:
        upgrade(url)
        sessions = sessionmaker_for(make_engine(url))
        big, regular, small = f"digest@{HOST}", f"regular@{HOST}", f"small@{HOST}"
        step(f"adding {args.members} digest members and {args.members} regular members")
        with sessions.begin() as s:
            domains.create(s, HOST)
            for name, mode in ((big, DeliveryMode.mime_digests), (regular, None)):
                mlist = lists.create(s, name)
                mlist.digest_size_threshold = 0  # no send with the posts: timed below
                entries = [(f"m{i:05d}@members.example", "") for i in range(args.members)]
                members.add_many(s, mlist, entries, delivery_mode=mode)
            mlist = lists.create(s, small)
            for i in range(10):
                members.add(s, mlist, f"s{i}@members.example")
        raws = [post(n, big) for n in range(args.posts)]

        step(f"keeping {args.posts} posts for the digest")
        with sessions.begin() as s:
            mlist = lists.get(s, big)
            ctx = paths.session_context(s, mlist)
            for n, raw in enumerate(raws):
                store.add(
                    s,
                    mlist.id,
                    transforms.archive_copy(ctx, raw),
                    subject=f"bench post number {n}",
                    now=datetime.now(UTC),
                )
        step("building and queuing the digest")
        start = time.perf_counter()
        with sessions.begin() as s:
            done_list = lists.get(s, big).id
            done = send.send(s, lists.get(s, big), datetime.now(UTC))
        digest_s = time.perf_counter() - start
        with sessions() as s:
            (row,) = s.scalars(select(OutboxMessage).where(OutboxMessage.kind == "digest"))
            digest_size, digest_rcpts = len(row.raw), len(row.recipients)
        assert done.posts == args.posts and digest_rcpts == args.members

        step(f"queuing the {args.posts} posts as regular copies")
        start = time.perf_counter()
        for n, raw in enumerate(raws):
            with sessions.begin() as s:
                mlist = lists.get(s, regular)
                rcpts = [f"m{i:05d}@members.example" for i in range(args.members)]
                ctx = paths.session_context(s, mlist, n)
                outbox.enqueue(s, mlist.bounces_address, rcpts, transforms.members_copy(ctx, raw))
            if (n + 1) % 50 == 0:
                step(f"{n + 1}/{args.posts} regular posts queued")
        regular_s = time.perf_counter() - start
        with sessions() as s:
            regular_rows = s.scalar(
                select(func.count(OutboxMessage.id)).where(OutboxMessage.kind == "notice")
            )

        step("the milter's decision, without and with a digest member")
        engine = ListEngine(sessions)
        env = Envelope(mail_from="s0@members.example", recipients=[f"<{small}>"])

        def decide_rate() -> float:
            engine.decide(env, post(0, small, "s0@members.example"))  # warm the snapshot
            start = time.perf_counter()
            for n in range(args.decisions):
                verdict = engine.decide(env, post(n, small, "s0@members.example"))
                assert isinstance(verdict, Accept), verdict
            return args.decisions / (time.perf_counter() - start)

        plain_rate = decide_rate()
        with sessions.begin() as s:
            members.add(
                s, lists.get(s, small), "d@members.example", delivery_mode=DeliveryMode.mime_digests
            )
        digest_rate = decide_rate()
        engine.close()
        with sessions() as s:
            inline = s.scalar(
                select(func.count(OutboxMessage.id)).where(
                    OutboxMessage.kind == "digest", OutboxMessage.mailing_list_id != done_list
                )
            )
            kept = store.pending(s, lists.get(s, small).id).posts
        assert inline and inline * 10 + kept > args.decisions // 2

        backend = "postgresql" if args.postgres else "sqlite"
        print(f"backend {backend}; {args.posts} posts, {args.members} members")
        print(
            f"  MIME digest: built and queued in {digest_s * 1000:8.1f} ms "
            f"({digest_size / 1024:.0f} KiB, one outbox row for {digest_rcpts} members)"
        )
        print(
            f"  regular:     {regular_rows} copies queued in {regular_s * 1000:8.1f} ms "
            f"({regular_s / args.posts * 1000:.1f} ms a post)"
        )
        print(f"  ratio regular / digest: {regular_s / digest_s:6.1f}")
        print(
            f"  decide(): {plain_rate:6.0f} posts/s without a digest member, "
            f"{digest_rate:6.0f} posts/s with one (ratio {digest_rate / plain_rate:.2f}; "
            f"{inline} digests sent with a post at the 30 KiB threshold, {kept} posts waiting)"
        )
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
