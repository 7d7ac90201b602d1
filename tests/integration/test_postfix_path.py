"""The first path, end to end through a real private Postfix and the real milter: what is
Postfix's own (the scenarios every front end shares are in test_front_ends.py)."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.manage import members
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.labs import (
    PASSTHROUGH,
    copies,
    copy_data,
    make_list,
    milter_connection,
    queue_id,
    waits,
)


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


def test_the_milter_logs_one_decision_line_with_postfixs_queue_id(lab: Lab, db: Session) -> None:
    """An admin greps a post's fate by its Message-ID and finds Postfix's queue id, the
    list, the outcome and the reply in the milter's log."""
    mlist = make_list(db, "gus@example.org")
    post = make_post("gus@example.org", mlist.posting_address)
    msgid = next(
        line.split(b":", 1)[1].strip().decode()
        for line in post.splitlines()
        if line.lower().startswith(b"message-id:")
    )

    assert lab.send("gus@example.org", [mlist.posting_address], post) is None
    delivered(lab, "gus@example.org")

    def logged() -> list[str]:
        return [ln for ln in lab.log().splitlines() if f"message_id={msgid}" in ln]

    waits(lab, lambda: bool(logged()), timeout=10)
    (line,) = logged()
    assert "mtaplugin.decision" in line
    assert f"list={mlist.posting_address}" in line
    assert "outcome=accepted" in line and "reply=250" in line
    queue_id = line.split("queue_id=", 1)[1].split()[0]
    assert queue_id != "-" and queue_id in lab.postfix.log()


def test_mail_for_another_domain_leaves_the_milter_at_data(lab: Lab, db: Session) -> None:
    """A transaction without a list recipient steps aside at DATA: Postfix delivers it and
    sends the milter none of its header fields, body or end of message.  A list post on
    the same listener is sent all of them (so the counts are not vacuous)."""
    other = f"{unique('person')}@{PASSTHROUGH}"
    subject = unique("not-for-a-list")

    assert (
        lab.send("hal@example.org", [other], make_post("hal@example.org", other, subject)) is None
    )

    waits(lab, lambda: copies(lab, subject, other))
    line = milter_connection(lab, queue_id(copy_data(lab, subject, other)))
    assert "transactions=1 stepped_aside=1 headers=0 body_chunks=0 ends_of_message=0" in line

    mlist = make_list(db, "hal@example.org")
    subject = unique("list-post")
    post = make_post("hal@example.org", mlist.posting_address, subject)
    assert lab.send("hal@example.org", [mlist.posting_address], post) is None
    waits(lab, lambda: copies(lab, subject, "hal@example.org"))
    line = milter_connection(lab, queue_id(copy_data(lab, subject, "hal@example.org")))
    assert "transactions=1 stepped_aside=0 headers=" in line
    assert "headers=0" not in line and "ends_of_message=1" in line
