"""Two mail hosts on one PostgreSQL, as docs/scaling.md describes them: each host a private
Postfix with its own ``mtaplugin serve`` (milter, lookup, API, worker with its scheduler),
its worker re-injecting into its own Postfix; one list database; one sink standing in for
the members' servers.

Posts to the same lists are spread over both hosts at once.  Every member gets every
post exactly once (counted at the sink by Message-ID and recipient), whether the host
that took the post fanned it out in place or its copy went through the outbox, which both
workers poll: a row claimed by one worker is never sent by the other.  The daily digest
job, made due while both schedulers are running, runs once: each digest member gets one
digest, holding every post."""

from __future__ import annotations

import email
import threading
import time
from collections import Counter
from collections.abc import Iterator
from email.policy import compat32
from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from mtaplugin.enums import DeliveryMode, OutboxStatus
from mtaplugin.manage import members
from mtaplugin.model import JobRun, OutboxMessage
from mtaplugin.testing import free_port, wait_for
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.sink import Received, Sink
from tests.helpers import make_post, unique
from tests.integration.conftest import lab_database, postfix_lab
from tests.integration.labs import make_list, session_on

#: a list with more regular members than this goes through the outbox (both hosts)
EXPAND_MAX = 3
POSTS_PER_LIST = 12
POSTER = "poster@example.org"


@pytest.fixture(scope="module")
def hosts(
    request: pytest.FixtureRequest, lab_root: Path, lab_dns: DnsServer
) -> Iterator[tuple[Lab, Lab, Sink]]:
    """Two Postfix + ``mtaplugin serve`` pairs on one PostgreSQL database, one sink."""
    url = lab_database(request, lab_root, "postgresql")
    sink = Sink(free_port()).start()
    env = {"MTAPLUGIN_OUTBOX_EXPAND_IN_PLACE_MAX": str(EXPAND_MAX)}
    pair = [
        postfix_lab(lab_root / f"host-{name}", url, lab_dns, sink_port=sink.port, env=env)
        for name in ("a", "b")
    ]
    try:
        for lab in pair:
            lab.start()
        yield pair[0], pair[1], sink
    finally:
        for lab in pair:
            lab.stop()
        sink.stop()


def message_id(msg: Received) -> str:
    parsed = email.message_from_bytes(msg.data, policy=compat32)
    return str(parsed.get("Message-ID", "")).strip()


def deliveries(sink: Sink, ids: set[str]) -> Counter[tuple[str, str]]:
    """(Message-ID, recipient) → how many copies the sink got, for the posts ``ids``."""
    got: Counter[tuple[str, str]] = Counter()
    for msg in list(sink.messages):
        mid = message_id(msg)
        if mid in ids:
            for rcpt in msg.recipients:
                got[(mid, rcpt)] += 1
    return got


def post_all(hosts: tuple[Lab, Lab], lists: list[str], marker: str) -> set[str]:
    """POSTS_PER_LIST posts to each list, every other one through the other host, from
    two client threads per host at once; the Message-IDs of the posts accepted (a 4xx is
    tried again, as a sending MTA would)."""
    jobs = [(n, address) for address in lists for n in range(POSTS_PER_LIST)]
    accepted: set[str] = set()
    errors: list[str] = []
    lock = threading.Lock()

    def client(lab: Lab, mine: list[tuple[int, str]]) -> None:
        for n, address in mine:
            post = make_post(POSTER, address, subject=f"{marker} {address} #{n}")
            for _try in range(5):
                refused = lab.send(POSTER, [address], post)
                if refused is None:
                    parsed = email.message_from_bytes(post, policy=compat32)
                    with lock:
                        accepted.add(str(parsed["Message-ID"]).strip())
                    break
                if refused.code < 500:
                    continue
                with lock:
                    errors.append(f"{address} #{n}: {refused}")
                break

    threads = []
    for i, lab in enumerate(hosts):
        for j in range(2):
            mine = [job for k, job in enumerate(jobs) if k % 4 == 2 * i + j]
            threads.append(threading.Thread(target=client, args=(lab, mine)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(accepted) == len(jobs)
    return accepted


def test_posts_spread_over_two_hosts_reach_every_member_once_and_digests_go_once(
    hosts: tuple[Lab, Lab, Sink],
) -> None:
    a, b, sink = hosts
    with session_on(a) as db:
        small = make_list(db, POSTER, "s1@example.org", digest_size_threshold=0)
        big = make_list(db, POSTER, *(f"b{i}@example.org" for i in range(1, 6)))
        digest_members = [f"d{i}@example.net" for i in (1, 2)]
        for address in digest_members:
            members.add(db, small, address, delivery_mode=DeliveryMode.mime_digests)
        db.commit()
        small_address, big_address, small_id = small.posting_address, big.posting_address, small.id
    regular = {
        small_address: {POSTER, "s1@example.org"},
        big_address: {POSTER, *(f"b{i}@example.org" for i in range(1, 6))},
    }
    # the small list is fanned out in place by the host that took the post, the big
    # one's copies go through the outbox
    assert len(regular[big_address]) > EXPAND_MAX >= len(regular[small_address])

    marker = unique("two-hosts-")
    ids = post_all((a, b), list(regular), marker)
    expected = sum(len(r) for r in regular.values()) * POSTS_PER_LIST
    wait_for(lambda: sum(deliveries(sink, ids).values()) >= expected, timeout=60)

    # Both workers poll the one outbox: give a second copy time to show up, then count.
    with session_on(a) as db:
        wait_for(lambda: queued(db) == 0, timeout=30)
    got = deliveries(sink, ids)
    twice = {key: n for key, n in got.items() if n > 1}
    assert not twice, f"copies delivered more than once: {twice}"
    by_list: dict[str, set[str]] = {}
    for msg in sink.messages:
        mid = message_id(msg)
        if mid in ids:
            to = email.message_from_bytes(msg.data, policy=compat32)["List-Post"] or ""
            for address in regular:
                if address in to:
                    by_list.setdefault(address, set()).update(msg.recipients)
    assert by_list == regular
    assert len(got) == expected

    # The daily digest job, due now for both schedulers (each looks every 5 s).
    with session_on(a) as db:
        db.execute(update(JobRun).where(JobRun.name == "digests").values(due_at=func.now()))
        db.commit()
    wait_for(
        lambda: all(any(b"Digest, Vol" in m.data for m in sink.to(d)) for d in digest_members),
        timeout=40,
    )
    # Both schedulers look for due jobs every 5 s: a second run would have shown by now.
    time.sleep(11)
    with session_on(a) as db:
        wait_for(lambda: queued(db) == 0, timeout=30)
        runs = db.scalar(select(JobRun).where(JobRun.name == "digests"))
        assert runs is not None and runs.last_result == 1 and runs.lease_holder is None
        digests_queued = db.scalar(
            select(func.count(OutboxMessage.id)).where(
                OutboxMessage.kind == "digest", OutboxMessage.mailing_list_id == small_id
            )
        )
        assert digests_queued == 1
    small_posts = {
        mid
        for msg in sink.messages
        for mid in [message_id(msg)]
        if mid in ids and small_address in msg.data.decode(errors="replace")
    }
    assert len(small_posts) == POSTS_PER_LIST
    for address in digest_members:
        digests = [m for m in sink.to(address) if b"Digest, Vol" in m.data]
        assert len(digests) == 1, f"{address} got {len(digests)} digests"
        text = digests[0].data.decode(errors="replace")
        assert all(mid in text for mid in small_posts)
        assert text.count(marker) >= POSTS_PER_LIST


def queued(db: Session) -> int:
    db.expire_all()
    return int(
        db.scalar(
            select(func.count(OutboxMessage.id)).where(OutboxMessage.status == OutboxStatus.queued)
        )
        or 0
    )
