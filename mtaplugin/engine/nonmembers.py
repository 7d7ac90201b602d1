"""Who goes on a list's nonmember roster when they post (Mailman's nonmember-moderation
rule adds every poster who holds no role on the list, so that a moderator can give that
sender an action, from a held post or in the roster; Postorius lists them).

The poster of a held post, and of a post refused for one list among others, is recorded
by :func:`mtaplugin.engine.persist.persist`, in the decision's transaction (their address
created unverified, with no user).  A post refused by every list it is addressed to
stores nothing else (one 5xx tells the sender); :func:`record_refused` records its poster
all the same, in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from mtaplugin.engine.recipients import Target
from mtaplugin.manage import nonmembers as roster
from mtaplugin.posting.rules.bans import BANNED_ADDRESS
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.verdict import ListOutcome, Refused
from mtaplugin.vocabulary.addresses import Subaddress


def recorded(sender: str, target: Target, snap: ListSnapshot, outcome: ListOutcome) -> bool:
    """Whether the poster ``sender`` of a post to ``target`` goes on its nonmember roster:
    a post to the list's posting address from a sender with no role on the list, not a
    banned one (Mailman's ban rule comes first)."""
    if target.subaddress is not Subaddress.posting or not sender or snap.roles_of(sender):
        return False
    if any(reason.rule == BANNED_ADDRESS for reason in outcome.reasons):
        return False
    return not (isinstance(outcome, Refused) and outcome.rule == BANNED_ADDRESS)


def record_refused(
    conn: Connection,
    sender: str,
    targets: Sequence[Target],
    snapshots: Sequence[ListSnapshot],
    outcomes: Sequence[ListOutcome],
    now: datetime,
) -> None:
    """Record ``sender`` on the roster of every list that refused their post outright (as
    of ``now``, the engine's clock)."""
    wanted = [
        t.found.pk
        for t, snap, outcome in zip(targets, snapshots, outcomes, strict=True)
        if recorded(sender, t, snap, outcome)
    ]
    if not wanted:
        return
    with Session(bind=conn) as session:
        for pk in wanted:
            roster.record_nonmember(session, pk, sender, now)
        session.flush()
