"""The compiled rule chain follows the list's versions (:mod:`mtaplugin.posting.chain`):
a change of the list's settings (a new snapshot, at a new generation) is seen by the next
post, a snapshot keeps its own chain, another site policy compiles again, and the chain
does not keep its snapshot alive."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import Action
from mtaplugin.lists.cache import SnapshotCache
from mtaplugin.manage import bans as manage_bans
from mtaplugin.manage import domains, header_matches, lists, members
from mtaplugin.model import MailingList
from mtaplugin.posting import chain, pipeline
from mtaplugin.posting.rules.base import SitePolicy
from mtaplugin.posting.verdict import Accepted, Held, Refused
from mtaplugin.vocabulary.envelope import Envelope, Post
from tests.helpers import make_post, unique
from tests.unit.test_rule_chain import RATES, snap


@pytest.fixture(autouse=True)
def _fresh_chains() -> Iterator[None]:
    chain.forget()
    yield
    chain.forget()


# --- a change of the list's settings is seen by the next post --------------------------
HOST = "lists.test"


@pytest.fixture
def mlist(txn_session: Session) -> MailingList:
    domains.create(txn_session, HOST)
    m = lists.create(txn_session, f"{unique('chain')}@{HOST}")
    members.add(txn_session, m, "anne@example.com")
    return m


def test_a_new_list_version_recompiles_the_chain(txn_session: Session, mlist: MailingList) -> None:
    """As the milter does: the RCPT lookup reads the list's generation, the snapshot cache
    gives the snapshot of that generation, the post is decided on it."""
    snapshots = SnapshotCache()
    session = txn_session

    def decide(headers: dict[str, str] | None = None, body: str = "") -> Any:
        session.flush()
        generation = session.scalar(
            select(MailingList.generation).where(MailingList.id == mlist.id)
        )
        assert generation is not None
        with Session(bind=session.connection()) as reader:
            snapshot = snapshots.get(reader, mlist.id, generation)
        raw_post = make_post("anne@example.com", mlist.fqdn_listname, headers=headers)
        if body:
            raw_post += body.encode()
        env = Envelope(mail_from="anne@example.com", recipients=[f"<{mlist.fqdn_listname}>"])
        out = pipeline.process(snapshot, env, Post(raw_post), f"<{mlist.fqdn_listname}>")
        return snapshot, out

    first, out = decide()
    assert isinstance(out, Accepted)
    # the same version: the same snapshot, its chain kept
    again, out = decide()
    assert again is first and isinstance(out, Accepted)

    manage_bans.add(session, mlist, "anne@example.com")
    banned, out = decide()
    assert banned.generation > first.generation
    assert isinstance(out, Refused) and out.rule == "banned-address"

    manage_bans.remove(session, mlist, "anne@example.com")
    header_matches.add(session, mlist, "X-Spam-Flag", "yes", Action.hold)
    matched, out = decide({"X-Spam-Flag": "yes"})
    assert matched.generation > banned.generation
    assert isinstance(out, Held) and [r.rule for r in out.reasons] == ["header-match"]

    mlist.max_message_size = 1
    session.add(mlist)
    small, out = decide(body="x" * 3000)
    assert small.generation > matched.generation
    assert isinstance(out, Held) and [r.rule for r in out.reasons] == ["max-size"]

    mlist.max_message_size = 0
    session.add(mlist)
    _large, out = decide(body="x" * 3000)
    assert isinstance(out, Accepted)
    # the older snapshot still decides with its own settings
    env = Envelope(mail_from="anne@example.com", recipients=[f"<{mlist.fqdn_listname}>"])
    old = pipeline.process(
        small,
        env,
        Post(make_post("anne@example.com", mlist.fqdn_listname) + b"x" * 3000),
        f"<{mlist.fqdn_listname}>",
    )
    assert isinstance(old, Held)


def test_another_site_policy_recompiles_the_chain() -> None:
    snapshot = snap()
    plain = chain.compiled(pipeline.POSTING_RULES, snapshot, SitePolicy())
    assert "sender-rate" not in [r.id for r in plain]
    rated = chain.compiled(pipeline.POSTING_RULES, snapshot, RATES)
    assert "sender-rate" in [r.id for r in rated]
    # an equal policy (another object) keeps the chain
    again = chain.compiled(pipeline.POSTING_RULES, snapshot, SitePolicy())
    assert [r.id for r in again] == [r.id for r in plain]
    assert chain.compiled(pipeline.POSTING_RULES, snapshot, SitePolicy()) is again


def test_the_chain_does_not_keep_its_snapshot_alive() -> None:
    snapshot = snap(emergency=True)
    chain.compiled(pipeline.POSTING_RULES, snapshot, SitePolicy())
    gone = weakref.ref(snapshot)
    del snapshot
    gc.collect()
    assert gone() is None
    # a later snapshot of the list (the same pk) is compiled for itself
    later = chain.compiled(pipeline.POSTING_RULES, snap(), SitePolicy())
    assert "emergency" not in [r.id for r in later]
