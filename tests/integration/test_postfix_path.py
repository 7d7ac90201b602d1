"""The first path, end to end through a real private Postfix and the real milter: what is
Postfix's own (the scenarios every front end shares are in test_front_ends.py)."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from mtaplugin.manage import members
from mtaplugin.model.enums import MemberRole
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.labs import PASSTHROUGH, make_list, waits


def delivered(lab: Lab, *emails: str) -> None:
    waits(lab, lambda: all(lab.sink.to(e) for e in emails), timeout=30)


def test_passthrough_recipient_is_untouched_in_the_same_transaction(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "fay@example.org")
    other = f"{unique('person')}@{PASSTHROUGH}"
    post = make_post("fay@example.org", mlist.posting_address)

    assert lab.send("fay@example.org", [mlist.posting_address, other], post) is None

    delivered(lab, "fay@example.org", other)
    assert lab.sink.to(other)[0].data.count(b"Hello, list.") == 1


def test_owner_address_fans_out_to_owners_and_moderators(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "jo@example.org")
    members.add(db, mlist, "boss@example.org", MemberRole.owner)
    members.add(db, mlist, "mod@example.org", MemberRole.moderator)
    db.commit()
    owner = mlist.posting_address.replace("@", "-owner@")

    assert lab.send("x@example.com", [owner], make_post("x@example.com", owner)) is None

    delivered(lab, "boss@example.org", "mod@example.org")
    assert not [m for m in lab.sink.to("jo@example.org") if b"x@example.com" in m.data]


@pytest.fixture(autouse=True)
def _logs(lab: Lab) -> object:
    """On failure, pytest shows this teardown output: the tails of both logs."""
    yield
    print("--- mtaplugin log ---\n" + lab.log()[-3000:])
    print("--- postfix log ---\n" + lab.postfix.log()[-3000:])
