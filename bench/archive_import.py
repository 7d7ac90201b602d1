"""Archive import: generated posts with real-looking threads imported from an mbox file;
the import rate and the archive's size on disk against the mbox.

Each post arrives as at a list: two relays' Received:, a DKIM signature and the receiving
host's Authentication-Results above the poster's own fields (``--bare``: only the fields
threading needs).

The posts come in threads (70 % are replies to one of the 50 posts before them, some
named only in References, a few with In-Reply-To dropped so that the subject decides),
over a few months, from 200 authors, with a few paragraphs of text each.  The archive is
imported once (timed) and again (every post skipped: the idempotence check's cost).  On
SQLite the size is the database file's; on PostgreSQL the tables' and their indexes'.
(Search and page latency are the archive pages' bench.)

    .venv/bin/python bench/archive_import.py [--posts 100000] [--postgres] [--bare]
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select, text

from mtaplugin.archive.importing import Imported, import_mbox
from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists
from mtaplugin.model.archive import ArchivedMessage, ArchiveThread
from mtaplugin.testing.benchdb import bench_database

WORDS = [
    "the",
    "list",
    "server",
    "archive",
    "thread",
    "reply",
    "post",
    "member",
    "moderator",
    "digest",
    "bounce",
    "message",
    "subject",
    "header",
    "body",
    "text",
    "search",
    "index",
    "mail",
    "domain",
    "address",
    "release",
    "plan",
    "meeting",
    "question",
    "answer",
    "patch",
    "review",
    "build",
    "test",
    "deploy",
    "config",
    "option",
    "default",
    "value",
    "change",
]


def paragraph(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(20, 60))]
    lines, line = [], ""
    for w in words:
        if len(line) + len(w) > 70:
            lines.append(line)
            line = ""
        line = f"{line} {w}".strip()
    return "\n".join([*lines, line])


def b64(rng: random.Random, n: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    return "".join(rng.choice(alphabet) for _ in range(n))


def trace(rng: random.Random, who: str, when: datetime, mid: str) -> list[str]:
    """The header fields a post arrives with at the list (before it is archived): two
    relays' Received:, the poster's DKIM signature and the receiving host's
    Authentication-Results (signatures are random base64, as incompressible as real ones)."""
    stamp = when.strftime("%a, %d %b %Y %H:%M:%S +0000")
    host = who.split("@")[1]
    qid = f"{rng.getrandbits(40):010X}"
    sig = b64(rng, 344)
    folded = "\n\t ".join(sig[i : i + 70] for i in range(0, len(sig), 70))
    return [
        f"Received: from mail.{host} (mail.{host} [198.51.100.{rng.randint(1, 254)}])\n"
        f"\tby lists.bench (Postfix) with ESMTPS id {qid}\n\tfor <team@lists.bench>; {stamp}",
        f"Received: from [192.168.{rng.randint(0, 9)}.{rng.randint(2, 254)}] (unknown)\n"
        f"\tby mail.{host} (Postfix) with ESMTPSA id {rng.getrandbits(40):010X};\n\t{stamp}",
        f"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d={host}; s=mail;\n"
        f"\tt={int(when.timestamp())}; bh={b64(rng, 43)}=;\n"
        "\th=From:To:Subject:Date:Message-ID:In-Reply-To:References;\n"
        f"\tb={folded}",
        f"Authentication-Results: lists.bench; dkim=pass header.d={host}; spf=pass "
        f"smtp.mailfrom={who}; dmarc=pass header.from={host}",
        "MIME-Version: 1.0",
        "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Thunderbird/128.5.0",
        "To: team@lists.bench",
        "Content-Transfer-Encoding: 8bit",
    ]


def generate(path: Path, posts: int, seed: int = 1, bare: bool = False) -> None:
    """``posts`` threaded posts as an mbox; ``bare``: only the fields threading needs (no
    trace or signature headers)."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    made: list[tuple[str, str, list[str]]] = []  # (message-id, subject, references)
    with path.open("w") as out:
        for i in range(posts):
            when = start + timedelta(minutes=i * 3)
            who = f"user{rng.randint(1, 200)}@example.org"
            mid = f"<p{i}.{rng.getrandbits(32):x}@example.org>"
            head = [] if bare else trace(rng, who, when, mid)
            head.append(f"From: User {who.split('@')[0]} <{who}>")
            if made and rng.random() < 0.7:
                pmid, psubject, prefs = rng.choice(made[-50:])
                subject = psubject if psubject.startswith("Re: ") else f"Re: {psubject}"
                refs = [*prefs[-10:], pmid]
                r = rng.random()
                if r > 0.05:
                    head.append(f"In-Reply-To: {pmid}")
                if r > 0.02:
                    head.append("References: " + "\n ".join(refs))
                quoted = "\n".join(f"> {line}" for line in paragraph(rng).splitlines()[:3])
                body = f"{quoted}\n\n{paragraph(rng)}\n"
            else:
                subject, refs = f"[Team] {' '.join(rng.sample(WORDS, 4))}", []
                body = f"{paragraph(rng)}\n\n{paragraph(rng)}\nFrom the start.\n"
            head += [
                f"Subject: {subject}",
                f"Date: {when.strftime('%a, %d %b %Y %H:%M:%S +0000')}",
                f"Message-ID: {mid}",
                "Content-Type: text/plain; charset=utf-8",
            ]
            made.append((mid, subject, refs))
            stamp = when.strftime("%a %b %d %H:%M:%S %Y")
            body = "\n".join(
                f">{line}" if line.lstrip(">").startswith("From ") else line
                for line in body.splitlines()
            )
            out.write(f"From {who} {stamp}\n" + "\n".join(head) + f"\n\n{body}\n\n")


#: the archive's tables (the search index's included)
TABLES = ("archived_messages", "archive_threads", "archive_waiting", "archive_fts")


def size_on_disk(url: str, engine_url: str) -> tuple[int, dict[str, int]]:
    """The archive's bytes on disk, and by table (with its indexes; on SQLite the FTS5
    index's shadow tables count for ``archive_fts``)."""
    engine = make_engine(engine_url)
    parts: dict[str, int] = {}
    with engine.connect() as conn:
        if url.startswith("sqlite"):
            rows = conn.execute(
                text(
                    "SELECT coalesce(m.tbl_name, d.name), sum(d.pgsize) FROM dbstat d "
                    "LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1"
                )
            )
            for name, size in rows:
                key = "archive_fts" if str(name).startswith("archive_fts") else str(name)
                parts[key] = parts.get(key, 0) + int(size or 0)
            total = Path(url.split("///", 1)[1]).stat().st_size
        else:
            for table in TABLES:
                parts[table] = int(
                    conn.scalar(
                        text(f"SELECT coalesce(pg_total_relation_size(to_regclass('{table}')), 0)")
                    )
                    or 0
                )
            total = sum(parts.values())
    engine.dispose()
    return total, {k: v for k, v in parts.items() if k in TABLES}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=100_000)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument(
        "--bare",
        action="store_true",
        help="posts without trace and signature headers (smaller than real ones)",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-archive-bench-"))
    url, server = bench_database(root, args.postgres)
    try:
        mbox = root / "posts.mbox"
        generate(mbox, args.posts, bare=args.bare)
        upgrade(url)
        engine = make_engine(url)
        sessions = sessionmaker_for(engine)
        with sessions.begin() as s:
            domains.create(s, "lists.bench")
            list_id = lists.create(s, "team@lists.bench").id

        def progress(done: Imported) -> None:
            print(f"\r{done.read} read", end="", flush=True)

        for label in ("import", "again (all skipped)"):
            t0 = time.perf_counter()
            with mbox.open("rb") as fh:
                done = import_mbox(sessions, list_id, fh, datetime.now(UTC), progress)
            took = time.perf_counter() - t0
            print(
                f"\r{label}: {done.read} posts in {took:.1f} s = {done.read / took:.0f} posts/s "
                f"({done.archived} archived, {done.skipped} skipped)"
            )
        with sessions() as s:
            threads = s.scalar(select(func.count(ArchiveThread.id)))
            roots = s.scalar(select(func.count()).where(ArchivedMessage.parent_id.is_(None)))
        mbox_size = mbox.stat().st_size
        db_size, parts = size_on_disk(url, url)
        print(f"threads: {threads} ({roots} posts without a parent)")
        print(
            f"mbox {mbox_size / 1e6:.1f} MB; archive on disk {db_size / 1e6:.1f} MB "
            f"= {db_size / mbox_size:.2f}x the mbox"
        )
        for table, size in sorted(parts.items(), key=lambda kv: -kv[1]):
            print(f"  {table}: {size / 1e6:.1f} MB = {size / mbox_size:.2f}x the mbox")
        engine.dispose()
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
