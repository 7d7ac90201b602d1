"""The archive's search index and pages on a large archive: generated posts (threads of a
few replies, text drawn from a Zipf-like vocabulary, some quoting their parent) written
straight into the archive's tables, the search index kept by its triggers as in real use.

Reports the archiving rate with the index, the index's size against the posts' raw bytes
(the "mbox"), search latency p50/p95 (a rare word, a common word, two words, newest
first) and the latency of a thread page and of the overview page.

    .venv/bin/python bench/archive_search.py [--posts 100000] [--repeat 30] [--postgres]
"""

from __future__ import annotations

import argparse
import itertools
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from falcon import testing
from sqlalchemy import insert, select, text

from mtaplugin import config
from mtaplugin.archive import search
from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.enums import ArchivePolicy
from mtaplugin.manage import domains, lists
from mtaplugin.model import ArchivedMessage, ArchiveThread
from mtaplugin.testing.benchdb import bench_database
from mtaplugin.web.app import create_web_app

START = datetime(2024, 1, 1, tzinfo=UTC)
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "po", "se", "vi", "gra", "ster", "fen", "dul"]


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(words, key=lambda w: (len(w), w))


def sentence(rng: random.Random, words: list[str], cumulative: list[float], n: int) -> str:
    return " ".join(rng.choices(words, cum_weights=cumulative, k=n))


def raw_post(mid: str, sender: str, subject: str, date: datetime, body: str) -> bytes:
    return (
        f"From: {sender}\nTo: big@lists.bench\nSubject: {subject}\nMessage-ID: <{mid}>\n"
        f"Date: {date.strftime('%a, %d %b %Y %H:%M:%S +0000')}\n"
        f"Content-Type: text/plain; charset=utf-8\n\n{body}\n"
    ).encode()


def fill(sessions, list_pk: int, posts: int, rng: random.Random) -> tuple[float, int]:
    """Archive ``posts`` generated posts; (seconds, raw bytes)."""
    words = vocabulary(rng)
    weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
    raw_bytes = 0
    began = time.perf_counter()
    n = 0
    batch = 500
    while n < posts:
        with sessions.begin() as s:
            rows = []
            for _ in range(min(batch, posts - n) // 5 or 1):
                subject = sentence(rng, words, weights, 5)
                thread = ArchiveThread(
                    mailing_list_id=list_pk,
                    subject=subject,
                    subject_key=subject,
                    started_at=START,
                    last_post_at=START,
                    posts=5,
                )
                s.add(thread)
                s.flush()
                parent_text = ""
                for k in range(5):
                    date = START + timedelta(minutes=n * 7)
                    body = "\n".join(
                        sentence(rng, words, weights, rng.randint(8, 16))
                        for _ in range(rng.randint(3, 12))
                    )
                    if parent_text:
                        body = (
                            "\n".join("> " + line for line in parent_text.split("\n")[:4])
                            + "\n\n"
                            + body
                        )
                    parent_text = body
                    mid = f"p{n}@gen.bench"
                    sender = f"user{rng.randint(1, 2000)}@people.bench"
                    raw = raw_post(mid, sender, ("Re: " if k else "") + subject, date, body)
                    raw_bytes += len(raw)
                    rows.append(
                        {
                            "mailing_list_id": list_pk,
                            "message_id": mid,
                            "message_id_hash": f"H{n:010d}",
                            "sender": sender,
                            "sender_name": f"User {sender[4:8]}",
                            "subject": ("Re: " if k else "") + subject,
                            "date": date,
                            "archived_at": date,
                            "raw": raw,
                            "headers": {},
                            "text": body,
                            "attachments": [],
                            "thread_id": thread.id,
                            "references": [],
                            "in_reply_to": "",
                        }
                    )
                    n += 1
            s.execute(insert(ArchivedMessage), rows)
    return time.perf_counter() - began, raw_bytes


def sizes(engine) -> tuple[int, int]:
    """(bytes of the search index, bytes of the archived posts' table)."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            index = conn.scalar(text("SELECT pg_total_relation_size('archive_fts')"))
            table = conn.scalar(text("SELECT pg_total_relation_size('archived_messages')"))
        else:
            index = conn.scalar(
                text("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'archive_fts%'")
            )
            table = conn.scalar(
                text(
                    "SELECT sum(pgsize) FROM dbstat WHERE name = 'archived_messages' "
                    "OR name LIKE 'ix_archived%' OR name LIKE 'sqlite_autoindex_archived%'"
                )
            )
    return int(index or 0), int(table or 0)


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--posts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--postgres", action="store_true", help="a throw-away PostgreSQL")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-archive-"))
    root.chmod(0o755)  # the postgres user starts its server below it
    url, server = bench_database(root, args.postgres)
    try:
        upgrade(url)
        engine = make_engine(url)
        sessions = sessionmaker_for(engine)
        with sessions.begin() as s:
            domains.create(s, "lists.bench")
            mlist = lists.create(s, "big@lists.bench")
            mlist.archive_policy = ArchivePolicy.public
            list_pk, list_id = mlist.id, mlist.list_id
        rng = random.Random(17)
        seconds, raw_bytes = fill(sessions, list_pk, args.posts, rng)
        if engine.dialect.name == "postgresql":
            with engine.begin() as conn:
                conn.execute(text("ANALYZE"))
        index, table = sizes(engine)
        print(f"database: {engine.dialect.name}, {args.posts} posts")
        print(f"archiving with the index: {args.posts / seconds:,.0f} posts/s")
        print(f"raw posts (the mbox): {raw_bytes / 1e6:,.1f} MB")
        print(f"archived_messages table and indexes: {table / 1e6:,.1f} MB")
        print(f"search index: {index / 1e6:,.1f} MB ({index / raw_bytes:.2f}x the mbox)")
        print(f"store + index: {(table + index) / raw_bytes:.2f}x the mbox")

        words = vocabulary(random.Random(17))
        queries = {
            "rare word": words[-1],
            "common word": words[0],
            "two words": f"{words[3]} {words[40]}",
            "phrase": f'"{words[0]} {words[1]}"',
        }
        for label, q in queries.items():
            for order in (search.Order.relevance, search.Order.date):

                def run(q: str = q, order: search.Order = order) -> None:
                    with sessions() as s:
                        search.search(s, search.Query(q, [list_pk], order=order))

                p50, p95 = timed(run, args.repeat)
                print(f"search {label:12} {order.value:9}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms")

        settings = config.load(environ={"MTAPLUGIN_SITE_VAR_DIR": str(root / "var")})
        app = create_web_app(settings, sessions)
        with sessions() as s:
            thread_ids = list(s.scalars(select(ArchiveThread.id).limit(1000)))
        for label, path in (
            ("thread page", lambda: f"/archive/{list_id}/thread/{rng.choice(thread_ids)}/"),
            ("overview page", lambda: f"/archive/{list_id}/"),
            ("search page", lambda: f"/archive/{list_id}/search?q={words[5]}"),
        ):

            def get(path: Callable[[], str] = path) -> None:
                assert testing.simulate_get(app, path()).status_code == 200

            p50, p95 = timed(get, args.repeat)
            print(f"{label:14}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms")
        return 0
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
