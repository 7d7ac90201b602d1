"""Attacks that come by mail, replayed through the real private Postfix and milter
(docs/security.md, findings H2, M1 and M2 of the security review)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.model import HeldMessage, MailingList
from mtaplugin.passwords import hash_password
from mtaplugin.posting.rules.moderation import NONMEMBER_MODERATION
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.labs import copies, make_list


def held_reasons(db: Session, mlist: MailingList, subject: str) -> list[str]:
    db.expire_all()
    held = db.scalars(
        select(HeldMessage).where(
            HeldMessage.mailing_list_id == mlist.id, HeldMessage.subject == subject
        )
    ).all()
    return [rule for h in held for rule, _text in h.reasons]


def password_checks(lab: Lab, mlist: MailingList) -> int:
    """The moderator-password checks mtaplugin made for ``mlist`` (it logs each one)."""
    return lab.log().count(f"moderator password of {mlist.fqdn_listname} checked")


# --- H2: Approved: lines cost one password check per post ----------------------------------
def test_ten_thousand_approved_lines_cost_one_password_check(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org", moderator_password=hash_password("s3cret"))
    subject = unique("approved-flood")
    post = b"Approved: x\r\n" * 10_000 + make_post(
        "stranger@example.com", mlist.posting_address, subject=subject
    )
    assert lab.send("stranger@example.com", [mlist.posting_address], post) is None
    assert held_reasons(db, mlist, subject) == [NONMEMBER_MODERATION]
    assert password_checks(lab, mlist) == 1
    assert copies(lab, subject, "ann@example.org") == 0


def test_the_right_password_in_the_first_approved_header_still_approves(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org", moderator_password=hash_password("s3cret"))
    subject = unique("approved-right")
    post = make_post(
        "stranger@example.com",
        mlist.posting_address,
        subject=subject,
        headers={"Approved": "s3cret"},
    )
    assert lab.send("stranger@example.com", [mlist.posting_address], post) is None
    wait_for(lambda: copies(lab, subject, "ann@example.org"), timeout=30)
    copy = next(m for m in lab.sink.to("ann@example.org") if subject.encode() in m.data)
    assert b"s3cret" not in copy.data
    assert password_checks(lab, mlist) == 1
